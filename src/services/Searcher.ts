/**
 * Searcher — capability: ranked full-text search over messages and summaries, always inside a
 * scope (one session, or one user's sessions). A user scope never returns another user's rows.
 *
 * Layers: `LcmMemory.layer` (src/layers/memory/LcmMemory.ts).
 */
import { Context, type Effect } from "effect"
import type { StorageError } from "../domain/storage/errors.ts"
import type { SearchHit, SearchOptions } from "../domain/memory/types.ts"

/** A search returns at most this many hits (a larger `limit` is taken as this; the CLI refuses it, saying so). */
export const MAX_SEARCH_HITS = 100

export class Searcher extends Context.Service<Searcher, {
  /** Any text is accepted as a query; bad syntax yields results or an empty list, never an error. */
  readonly search: (query: string, options: SearchOptions) => Effect.Effect<ReadonlyArray<SearchHit>, StorageError>
}>()("anna/Searcher") {}
