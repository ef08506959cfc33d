/**
 * After the whole run: any workspace filesystem a test (or an `anna` process it started) left
 * mounted under the temporary folder is unmounted, so a run never leaves loop devices behind. Each
 * test removes its own (support/cleanup.ts); this is the net under them.
 */
import { tmpdir } from "node:os"
import { detachUnder } from "../../src/layers/sandbox/workspaceDisk.ts"

export const teardown = async (): Promise<void> => {
  const left = await detachUnder(tmpdir()).catch(() => [])
  if (left.length > 0) console.warn(`⚠ unmounted ${left.length} workspace filesystem(s) left by tests: ${left.join(", ")}`)
}
