/**
 * Confining paths to the workspace. A path as the container sees it (absolute, or relative to the
 * session's working directory) is normalised, then walked one component at a time on the host,
 * following symlinks the way the container would: a relative target continues from the link's
 * folder, an absolute target under /workspace (or under the workspace's host folder) continues from
 * the workspace root, and any other absolute target — or a `..` above the root — is refused. What
 * does not exist yet (a file about to be written) is accepted below its nearest existing folder.
 */
import { Effect } from "effect"
import { lstatSync, readlinkSync } from "node:fs"
import { join, posix } from "node:path"
import { PathOutsideWorkspace } from "../../domain/sandbox/errors.ts"
import { WORKSPACE_MOUNT } from "../../domain/sandbox/types.ts"

/** Symlinks followed at most, as the kernel does (ELOOP). */
const MAX_LINKS = 40

const under = (root: string, p: string): boolean => p === root || p.startsWith(root.endsWith("/") ? root : root + "/")

/** The container path of `path` seen from `cwd`, if it stays under /workspace. */
export const containerPath = (cwd: string, path: string): string | undefined => {
  const resolved = posix.resolve(cwd, path)
  return under(WORKSPACE_MOUNT, resolved) ? resolved : undefined
}

const parts = (p: string): Array<string> => p.split("/").filter((s) => s !== "" && s !== ".")

/**
 * The host path for `path` (container view) with every symlink resolved; fails for anything that
 * leads outside `workspaceReal` (the realpath of the workspace folder).
 */
export const resolveInWorkspace = (workspaceReal: string, cwd: string, path: string) =>
  Effect.suspend(() => {
    const outside = Effect.fail(new PathOutsideWorkspace({ path }))
    if (path.includes("\u0000")) return outside
    const inContainer = containerPath(cwd, path)
    if (inContainer === undefined) return outside
    let pending = parts(posix.relative(WORKSPACE_MOUNT, inContainer))
    let resolved: Array<string> = []
    let links = 0
    let missing = false
    while (pending.length > 0) {
      const part = pending.shift() ?? ""
      if (part === "..") {
        if (resolved.length === 0) return outside
        resolved.pop()
        continue
      }
      if (missing) {
        resolved.push(part)
        continue
      }
      const host = join(workspaceReal, ...resolved, part)
      let isLink = false
      try {
        isLink = lstatSync(host).isSymbolicLink()
      } catch {
        missing = true
        resolved.push(part)
        continue
      }
      if (!isLink) {
        resolved.push(part)
        continue
      }
      if (++links > MAX_LINKS) return outside
      let target: string
      try {
        target = readlinkSync(host)
      } catch {
        return outside
      }
      if (target.startsWith("/")) {
        const root = under(WORKSPACE_MOUNT, target) ? WORKSPACE_MOUNT : under(workspaceReal, target) ? workspaceReal : undefined
        if (root === undefined) return outside
        resolved = []
        pending = [...parts(posix.relative(root, posix.normalize(target))), ...pending]
      } else {
        pending = [...parts(target), ...pending]
      }
    }
    return Effect.succeed(join(workspaceReal, ...resolved))
  })
