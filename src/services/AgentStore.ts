/**
 * AgentStore — the `agents` table: each agent's model (and the ones a chat may pick), its optional
 * cheaper summary tier and summarization spend guard, its prompt, context budget, tools, turn limit
 * and deadline, its sandbox settings, and whether it is enabled. Checks a patch before storing it;
 * the runtime reads agents through ConfigStore.snapshot (LiveConfig), which joins them with their
 * provider.
 *
 * Enabling follows one rule (`checkAgentModel` and `settleEnablement` in src/domain/config/agent.ts):
 * an agent without a usable model (no provider, or no model named by it or its provider) cannot be
 * switched on (`enabled: true` in a patch is refused); a patch with `awaitingModel: true` keeps it
 * disabled until it has a model and enables it then (the CLI creates agents that way). An agent
 * disabled by the operator stays disabled when it gets a model. A patch that says neither keeps the
 * state as it is (a new agent: enabled).
 *
 * Does not own the agents' sessions (memory's, kept when an agent is removed) nor their folders.
 *
 * Layers: `SqliteAgentStore.layer` (src/layers/config/SqliteAgentStore.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { Agent } from "../domain/config/agent.ts"
import type { AgentNotFound, InvalidConfig, ProviderNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export type AgentPatch = Partial<Omit<Agent, "id" | "createdAt" | "updatedAt">>

/** What removing an agent took with it, besides its row. */
export interface RemovedAgent {
  readonly agentId: string
  /** Users whose default agent it was (they fall back to the first enabled agent). */
  readonly usersDefaulted: number
  /** Group chats bound to it (unbound now). */
  readonly bindings: number
  /** Chats' current context and model choice with it. */
  readonly chatStates: number
}

export class AgentStore extends Context.Service<AgentStore, {
  readonly list: Effect.Effect<ReadonlyArray<Agent>, StorageError>
  readonly get: (id: string) => Effect.Effect<Agent, AgentNotFound | StorageError>
  /** The first enabled agent by creation time (the fallback for unrouted sessions). */
  readonly defaultAgent: Effect.Effect<Option.Option<Agent>, StorageError>
  readonly create: (
    id: string,
    patch: AgentPatch
  ) => Effect.Effect<Agent, InvalidConfig | ProviderNotFound | StorageError>
  readonly update: (
    id: string,
    patch: AgentPatch
  ) => Effect.Effect<Agent, AgentNotFound | InvalidConfig | ProviderNotFound | StorageError>
  /**
   * Removes an agent in one transaction: users it was the default of lose that default, its
   * group-chat bindings and chat states go. Its sessions (memory's) and its folder are left.
   */
  readonly remove: (id: string) => Effect.Effect<RemovedAgent, AgentNotFound | StorageError>
}>()("anna/AgentStore") {}
