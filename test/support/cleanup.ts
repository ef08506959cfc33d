/**
 * Removing a temporary folder that holds sandbox workspaces (or is one): when anna runs as root each
 * workspace is the mount point of its own filesystem (src/layers/sandbox/workspaceDisk.ts), which a
 * plain recursive delete cannot remove (EBUSY) — those are unmounted first, and a workspace's image
 * next to the folder goes with it.
 */
import { promises as fs } from "node:fs"
import { detachUnder, imageOf } from "../../src/layers/sandbox/workspaceDisk.ts"

export const removeTemp = async (dir: string): Promise<void> => {
  await detachUnder(dir).catch(() => [])
  await fs.rm(imageOf(dir), { force: true })
  await fs.rm(dir, { recursive: true, force: true })
}
