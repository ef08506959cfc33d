/**
 * Explorer — capability: inspect a summary (metadata and lineage) and expand it into its direct
 * constituents (source messages of a leaf, constituent summaries of a condensed summary), page by
 * page within a token limit. With a scope, summaries outside it are reported as not found.
 *
 * Layers: `LcmMemory.layer` (src/layers/memory/LcmMemory.ts).
 */
import { Context, type Effect } from "effect"
import type { SummaryNotFound } from "../domain/memory/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"
import type { ExpandOptions, ExpandResult, SearchScope, SummaryDescription } from "../domain/memory/types.ts"

export class Explorer extends Context.Service<Explorer, {
  readonly describe: (
    summaryId: string,
    scope?: SearchScope
  ) => Effect.Effect<SummaryDescription, SummaryNotFound | StorageError>
  readonly expand: (
    summaryId: string,
    options?: ExpandOptions & { readonly scope?: SearchScope | undefined }
  ) => Effect.Effect<ExpandResult, SummaryNotFound | StorageError>
}>()("anna/Explorer") {}
