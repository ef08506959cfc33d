/** The sandbox an agent gets: its settings, anna's defaults for what it leaves unset, its workspace. */
import { join } from "node:path"
import type { Agent } from "../config/agent.ts"
import { DEFAULT_IMAGE, DEFAULT_LIMITS, type SandboxSpec } from "./types.ts"

/** `$ANNA_HOME/workspaces/{agentId}` (agent "default" when there is none). */
export const workspaceOf = (home: string, agentId: string): string => join(home, "workspaces", agentId)

export const specFor = (
  home: string,
  agent: Agent | undefined,
  overrides: { readonly image?: string | undefined; readonly network?: string | undefined } = {}
): SandboxSpec => {
  const agentId = agent?.id ?? "default"
  return {
    agentId,
    workspace: workspaceOf(home, agentId),
    image: overrides.image ?? (agent !== undefined && agent.sandboxImage !== "" ? agent.sandboxImage : DEFAULT_IMAGE),
    network: overrides.network ?? agent?.sandboxNetwork ?? "disabled",
    limits: agent === undefined
      ? DEFAULT_LIMITS
      : { ...DEFAULT_LIMITS, memoryMb: agent.sandboxMemoryMb, cpus: agent.sandboxCpus, pids: agent.sandboxPids }
  }
}
