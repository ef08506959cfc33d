/**
 * `anna/memory`: the memory engine alone — lossless SQLite storage, DAG compaction, ranked search —
 * for a custom deployment that uses only the memory layers. It loads neither model SDK, nor Docker,
 * nor a chat platform's client (test/programs/memoryEntry.test.ts checks what importing it loads;
 * BENCHMARKS.md has its resident memory against `anna/layers`): `anna/layers` is the whole gateway.
 *
 * A deployment provides a `Summarizer`: `DeterministicSummarizer.layer` (no model), its own, or
 * `ModelSummarizer.layer`, which reaches models only through the `ProviderRegistry` service — the
 * SDK-backed registry is in `anna/layers`, so choosing it there is what loads the SDKs.
 *
 * Everything not exported here, from `anna` or from `anna/layers` is internal and may change.
 */
export * as DagCompactionEngine from "./layers/memory/DagCompactionEngine.ts"
export * as DeterministicSummarizer from "./layers/memory/DeterministicSummarizer.ts"
export * as LcmMemory from "./layers/memory/LcmMemory.ts"
export * as ModelSummarizer from "./layers/memory/ModelSummarizer.ts"
export * as SessionLocks from "./layers/memory/SessionLocks.ts"
export * as SimpleMemory from "./layers/memory/SimpleMemory.ts"
export * as Sqlite from "./layers/sql/Sqlite.ts"
export * as SqliteMemoryStore from "./layers/memory/SqliteMemoryStore.ts"

export { CompactionEngine } from "./services/CompactionEngine.ts"
export { Compactor } from "./services/Compactor.ts"
export { Explorer } from "./services/Explorer.ts"
export { MemoryProvider } from "./services/MemoryProvider.ts"
export { MemoryStore } from "./services/MemoryStore.ts"
export { ProfileStore } from "./services/ProfileStore.ts"
export { ReviewSource } from "./services/ReviewSource.ts"
export { MAX_SEARCH_HITS, Searcher } from "./services/Searcher.ts"
export { SessionManager } from "./services/SessionManager.ts"
export { Summarizer } from "./services/Summarizer.ts"
export type { SummaryRequest } from "./services/Summarizer.ts"

export {
  CapabilityMissing,
  CompactionFailed,
  InvalidInput,
  SessionNotFound,
  SpendGuardExceeded,
  StaleContext,
  SummarizerCircuitOpen,
  SummarizerError,
  SummaryNotFound,
  SummaryTooLong
} from "./domain/memory/errors.ts"
export { sessionRefFromKey } from "./domain/memory/session.ts"
export type * from "./domain/memory/types.ts"
export type { ContentBlock, Message, NewMessage } from "./domain/message.ts"
export { StorageError } from "./domain/storage/errors.ts"
