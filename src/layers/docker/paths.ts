/**
 * Confining paths to the workspace. A path as the container sees it (absolute, or relative to the
 * session's working directory) is normalised first, so `..` cannot climb out; then the longest part
 * of it that exists on the host is resolved through symlinks, and must still be inside the
 * workspace. What does not exist yet (a file about to be written) is checked through its nearest
 * existing parent; a dangling symlink counts as existing, so it cannot be written through.
 */
import { Effect } from "effect"
import { lstatSync, realpathSync } from "node:fs"
import { join, posix, relative, sep } from "node:path"
import { PathOutsideWorkspace } from "../../domain/sandbox/errors.ts"
import { WORKSPACE_MOUNT } from "../../domain/sandbox/types.ts"

/** Exists as a directory entry, without following symlinks (a dangling link exists). */
const present = (p: string): boolean => {
  try {
    lstatSync(p)
    return true
  } catch {
    return false
  }
}

const inside = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep)

/** The container path of `path` seen from `cwd`, if it stays under /workspace. */
export const containerPath = (cwd: string, path: string): string | undefined => {
  const resolved = posix.resolve(cwd, path)
  return resolved === WORKSPACE_MOUNT || resolved.startsWith(WORKSPACE_MOUNT + "/") ? resolved : undefined
}

/**
 * The host path for `path` (container view), with symlinks resolved; fails for anything outside
 * `workspaceReal` (the realpath of the workspace folder).
 */
export const resolveInWorkspace = (workspaceReal: string, cwd: string, path: string) =>
  Effect.suspend(() => {
    const outside = Effect.fail(new PathOutsideWorkspace({ path }))
    if (path.includes("\u0000")) return outside
    const inContainer = containerPath(cwd, path)
    if (inContainer === undefined) return outside
    const host = join(workspaceReal, ...posix.relative(WORKSPACE_MOUNT, inContainer).split("/").filter((s) => s !== ""))
    // Walk up to the nearest existing ancestor, resolve it, and re-attach the missing tail.
    let existing = host
    const tail: Array<string> = []
    while (!present(existing) && inside(workspaceReal, existing) && existing !== workspaceReal) {
      tail.unshift(existing.slice(existing.lastIndexOf(sep) + 1))
      existing = existing.slice(0, existing.lastIndexOf(sep))
    }
    let real: string
    try {
      real = realpathSync(existing)
    } catch {
      return outside
    }
    if (!inside(workspaceReal, real)) return outside
    const full = tail.length === 0 ? real : join(real, ...tail)
    return inside(workspaceReal, full) && !relative(workspaceReal, full).startsWith("..") ? Effect.succeed(full) : outside
  })
