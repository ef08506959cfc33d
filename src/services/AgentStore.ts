/**
 * AgentStore — the `agents` table: each agent's model (and the ones a chat may pick), its optional
 * cheaper summary tier and summarization spend guard, its prompt, context budget, tools, turn limit
 * and deadline, and its sandbox settings. Checks a patch before storing it; the runtime reads agents
 * through ConfigStore.snapshot (LiveConfig), which joins them with their provider.
 *
 * Layers: `SqliteAgentStore.layer` (src/layers/config/SqliteAgentStore.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { Agent } from "../domain/config/agent.ts"
import type { AgentNotFound, InvalidConfig, ProviderNotFound } from "../domain/config/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export type AgentPatch = Partial<Omit<Agent, "id" | "createdAt" | "updatedAt">>

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
}>()("anna/AgentStore") {}
