/**
 * Reading the operator's small files (SYSTEM.md, SOUL.md, presets in the agent's own folder, which no
 * sandbox can reach).
 */
import { constants, promises as fs } from "node:fs"
import type { FileHandle } from "node:fs/promises"

/**
 * A file of the operator (SOUL.md, SYSTEM.md, a preset in the agent's folder, which no sandbox can
 * reach): the operator may symlink it anywhere, but it is still read without blocking (O_NONBLOCK,
 * so a FIFO cannot freeze the gateway), only when it is a regular file, and capped at `maxBytes`.
 * Undefined when missing or unusable.
 */
export const readSmallFile = async (path: string, maxBytes: number): Promise<string | undefined> => {
  let handle: FileHandle
  try {
    handle = await fs.open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const st = await handle.stat()
    if (!st.isFile() || st.size > maxBytes) return undefined
    const buffer = Buffer.alloc(Math.min(st.size, maxBytes) + 1)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    if (bytesRead > maxBytes) return undefined
    return buffer.subarray(0, bytesRead).toString("utf8")
  } catch {
    return undefined
  } finally {
    await handle.close()
  }
}
