/**
 * AgentStore — the `agents` table as far as models go: each agent's main model, its optional
 * cheaper summary tier, and its summarization spend guard. (Routing, channels and workspaces of
 * agents come with the runtime.)
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
