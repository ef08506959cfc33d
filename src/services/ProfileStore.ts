/**
 * ProfileStore — capability: persistent per-user-per-agent notes (ctx_agent_memory).
 *
 * Layers: `LcmMemory.layer`, `SimpleMemory.layer` (src/layers/memory/).
 */
import { Context, type Effect } from "effect"
import type { InvalidInput } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export class ProfileStore extends Context.Service<ProfileStore, {
  /** The notes, or "" when there are none yet. */
  readonly getProfile: (userId: string, agentId: string) => Effect.Effect<string, StorageError>
  readonly setProfile: (userId: string, agentId: string, content: string) => Effect.Effect<void, StorageError | InvalidInput>
}>()("anna/ProfileStore") {}
