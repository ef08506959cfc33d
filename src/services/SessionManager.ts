/**
 * SessionManager — capability: session metadata (a JSON object per session, merged on save), the
 * list of sessions, and a session's full raw history.
 *
 * Layers: `LcmMemory.layer`, `SimpleMemory.layer` (src/layers/memory/).
 */
import { Context, type Effect } from "effect"
import type { SessionNotFound } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { SessionInfo } from "../domain/memory/types.ts"
import type { StoredMessage } from "./MemoryStore.ts"

export class SessionManager extends Context.Service<SessionManager, {
  readonly saveInfo: (sessionKey: string, info: Readonly<Record<string, unknown>>) => Effect.Effect<void, StorageError | SessionNotFound>
  readonly loadInfo: (sessionKey: string) => Effect.Effect<SessionInfo, StorageError | SessionNotFound>
  readonly listInfo: (filter?: {
    readonly agentId?: string | undefined
    readonly userId?: string | undefined
    readonly limit?: number | undefined
  }) => Effect.Effect<ReadonlyArray<SessionInfo>, StorageError>
  /** Raw messages in order, from `fromSeq` (default 1), at most `limit`. */
  readonly loadHistory: (
    sessionKey: string,
    options?: { readonly fromSeq?: number | undefined; readonly limit?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<StoredMessage>, StorageError | SessionNotFound>
}>()("anna/SessionManager") {}
