/**
 * The sandbox an agent gets: its settings, anna's defaults for what it leaves unset, its workspace.
 *
 * Folders under `{workspaces}/{agent}/`, where `{workspaces}` is AppConfig's root (`ANNA_WORKSPACES`,
 * default `$ANNA_HOME/workspaces`):
 * - the folder itself is the operator's: SYSTEM.md, SOUL.md and presets (`agents/*.md`) live there
 *   and are never mounted into a sandbox, so no sandboxed code can change them;
 * - `users/{user}/` is mounted at /workspace for that user's sessions (the default, `user` mode),
 *   so users of one agent never see each other's files;
 * - `shared/` is mounted for every user of the agent when the operator asks for it (`shared` mode).
 */
import { join } from "node:path"
import type { Agent, WorkspaceMode } from "../config/agent.ts"
import { DEFAULT_IMAGE, DEFAULT_LIMITS, type SandboxSpec } from "./types.ts"

/** `{workspaces}/{agentId}`: the agent's own (operator) folder. */
export const agentFolder = (workspaces: string, agentId: string): string => join(workspaces, agentId)

/** The folder mounted at /workspace for `userId` ('' = the shared one), inside the agent's folder. */
export const workspaceIn = (folder: string, mode: WorkspaceMode, userId: string): string =>
  mode === "user" && userId !== "" ? join(folder, "users", userId) : join(folder, "shared")

export const workspaceOf = (workspaces: string, agentId: string, mode: WorkspaceMode, userId: string): string =>
  workspaceIn(agentFolder(workspaces, agentId), mode, userId)

export const specFor = (
  workspaces: string,
  agent: Agent | undefined,
  overrides: {
    readonly image?: string | undefined
    readonly network?: string | undefined
    readonly userId?: string | undefined
  } = {}
): SandboxSpec => {
  const agentId = agent?.id ?? "default"
  const userId = overrides.userId ?? ""
  return {
    agentId,
    userId,
    workspace: workspaceOf(workspaces, agentId, agent?.sandboxWorkspace ?? "user", userId),
    image: overrides.image ?? (agent !== undefined && agent.sandboxImage !== "" ? agent.sandboxImage : DEFAULT_IMAGE),
    network: overrides.network ?? agent?.sandboxNetwork ?? "disabled",
    limits: agent === undefined
      ? DEFAULT_LIMITS
      : { ...DEFAULT_LIMITS, memoryMb: agent.sandboxMemoryMb, cpus: agent.sandboxCpus, pids: agent.sandboxPids, diskMb: agent.sandboxDiskMb }
  }
}
