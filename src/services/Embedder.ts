/**
 * Embedder — dense retrieval's model calls (issue 25): texts → vectors through the embedding model
 * an agent names (`anna agent set A --embedding-model PROVIDER/MODEL`, any OpenAI-compatible
 * `/v1/embeddings`). Every call passes the agent's spend guard first (its summary limit, counted
 * per agent over embedding calls) and is recorded in the UsageLog with purpose `embedding`,
 * failures too.
 *
 * Owns the provider call and its accounting; not the vectors (MemoryStore stores them, the
 * embedding worker decides what to embed, the Searcher fuses) and not which rows exist.
 *
 * Layers: `SdkEmbedder.layer` (src/layers/providers/SdkEmbedder.ts).
 */
import { Context, type Effect } from "effect"
import type { ModelRef } from "../domain/config/agent.ts"
import type { EmbeddingError, EmbeddingGuardExceeded } from "../domain/memory/errors.ts"
import type { DenseQuery } from "../domain/memory/types.ts"

export interface EmbedRequest {
  readonly agentId: string
  /** The session the call is for, when one ('' for a batch across an agent's sessions). */
  readonly sessionKey: string
  readonly userId?: string | undefined
  readonly model: ModelRef
  /** Non-empty texts, already cut to a bounded length (domain/search/dense.ts `embeddingText`). */
  readonly texts: ReadonlyArray<string>
}

export class Embedder extends Context.Service<Embedder, {
  /** One embeddings call: a vector per text, in order. */
  readonly embed: (request: EmbedRequest) => Effect.Effect<ReadonlyArray<Float32Array>, EmbeddingError | EmbeddingGuardExceeded>
  /**
   * The query's vector for a ranked search by `agentId`: undefined when the agent has no embedding
   * model or no vector of it is stored yet (no call then). Never fails: a failed call logs a
   * warning and gives undefined, so the search is lexical as without an embedding model.
   */
  readonly queryVector: (
    agentId: string,
    query: string,
    who?: { readonly sessionKey?: string | undefined; readonly userId?: string | undefined }
  ) => Effect.Effect<DenseQuery | undefined>
}>()("anna/Embedder") {}
