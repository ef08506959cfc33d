/**
 * A removed user's workspaces (part of UserRemoval; issue 23): `$ANNA_HOME/workspaces/<agent>/users/<user>/`,
 * one per agent that ran for them in `user` mode (domain/sandbox/spec.ts), go with the user, so a later
 * user of the same id finds no file of theirs (nor a HEARTBEAT.md the heartbeat would act on).
 *
 * `removeUserWorkspaces` is the one place a user's workspace is removed: how a workspace is stored may
 * change (a size-capped filesystem image per workspace, mounted at that folder), and removing one is
 * then extended here — and nowhere else.
 *
 * SECURITY: the folder is the user's, written by sandboxed code: nothing in it is followed. `rm`
 * removes a symbolic link itself, never what it points to, at the top as inside.
 */
import { Effect } from "effect"
import { type Dirent, lstatSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { isValidId } from "../../domain/config/agent.ts"
import { agentFolder } from "../../domain/sandbox/spec.ts"
// The workspace's storage is the sandbox's; this file only removes it (no container, no Docker needed).
import { imageOf, remove as removeWorkspace } from "../sandbox/workspaceDisk.ts"

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Agents with a folder under the workspaces root (those removed from the configuration too); throws when it cannot list them. */
export const agentFolders = (workspaces: string): ReadonlyArray<string> => {
  let entries: ReadonlyArray<Dirent>
  try {
    entries = readdirSync(workspaces, { withFileTypes: true })
  } catch (e) {
    if (e instanceof Error && "code" in e && e.code === "ENOENT") return []
    throw e
  }
  return entries.filter((d) => d.isDirectory() && isValidId(d.name)).map((d) => d.name).sort()
}

const exists = (path: string): boolean => {
  try {
    lstatSync(path)
    return true
  } catch (e) {
    if (e instanceof Error && "code" in e && e.code === "ENOENT") return false
    throw e
  }
}

/**
 * Deletes `userId`'s workspace of every agent; the agents whose workspace was there, and what could
 * not be deleted (each as a sentence part, for RemovalUnfinished). Running it again finishes it.
 */
export const removeUserWorkspaces = (
  workspaces: string,
  userId: string
): Effect.Effect<{ readonly removed: ReadonlyArray<string>; readonly failed: ReadonlyArray<string> }> =>
  Effect.promise(async () => {
    // Ids are checked when users are made; one that is not a plain name names no folder of ours.
    if (!isValidId(userId)) return { removed: [], failed: [] }
    const removed: Array<string> = []
    const failed: Array<string> = []
    let agents: ReadonlyArray<string>
    try {
      agents = agentFolders(workspaces)
    } catch (e) {
      return { removed, failed: [`the workspaces could not be listed (${errorText(e)})`] }
    }
    for (const agentId of agents) {
      const folder = join(agentFolder(workspaces, agentId), "users", userId)
      try {
        if (!exists(folder) && !exists(imageOf(folder))) continue
        // A workspace that is a filesystem of its own is unmounted and its image deleted with it.
        await removeWorkspace(folder)
        removed.push(agentId)
      } catch (e) {
        failed.push(`the workspace ${folder} could not be deleted (${errorText(e)})`)
      }
    }
    return { removed, failed }
  })
