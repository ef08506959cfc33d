/**
 * OpenAiEmbeddings — one call to an OpenAI-compatible `POST {baseURL}/embeddings` (OpenAI, Ollama,
 * vLLM, llama.cpp) on the official `openai` SDK, configured from the provider row only (as
 * OpenAiChat is). The SDK asks for base64 vectors and decodes them; the answer is checked here
 * (one vector per input, all of one length, finite numbers) before anyone stores it. Retries are
 * the caller's (the embedding worker backs off; a search falls back to lexical).
 */
import { Effect } from "effect"
import type { ProviderError } from "../../domain/model/errors.ts"
import { ProviderServerError } from "../../domain/model/errors.ts"
import type { ProviderConfig } from "../../domain/model/types.ts"
import { openAiClient, toProviderError } from "./OpenAiChat.ts"

/** One embeddings call may take this long (a local server embedding 64 long texts on a CPU is slow). */
const TIMEOUT_MS = 120_000

export interface EmbeddingsClient {
  readonly embed: (model: string, texts: ReadonlyArray<string>) => Effect.Effect<
    { readonly vectors: ReadonlyArray<Float32Array>; readonly inputTokens: number },
    ProviderError
  >
}

export const make = (config: ProviderConfig): EmbeddingsClient => {
  const client = openAiClient(config, TIMEOUT_MS)
  const toError = toProviderError(config.id)
  const bad = (detail: string) => new ProviderServerError({ provider: config.id, status: 502, detail: `malformed embeddings answer: ${detail}` })
  return {
    embed: (model, texts) =>
      Effect.tryPromise({
        try: (signal) => client.embeddings.create({ model, input: [...texts] }, { signal }),
        catch: toError
      }).pipe(Effect.flatMap((response) => {
        const data: ReadonlyArray<unknown> = Array.isArray(response.data) ? response.data : []
        const vectors: Array<Float32Array | undefined> = texts.map(() => undefined)
        for (const [i, item] of data.entries()) {
          if (typeof item !== "object" || item === null) return Effect.fail(bad("an embedding is not an object"))
          const index = "index" in item && typeof item.index === "number" ? item.index : i
          const embedding = "embedding" in item ? item.embedding : undefined
          if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((x) => typeof x === "number" && Number.isFinite(x))) {
            return Effect.fail(bad("an embedding is not a list of numbers"))
          }
          if (!Number.isInteger(index) || index < 0 || index >= texts.length) return Effect.fail(bad(`an embedding has index ${index}`))
          vectors[index] = Float32Array.from(embedding as ReadonlyArray<number>)
        }
        const all = vectors.filter((v): v is Float32Array => v !== undefined)
        if (all.length !== texts.length) return Effect.fail(bad(`${all.length} embeddings for ${texts.length} inputs`))
        if (all.some((v) => v.length !== all[0]?.length)) return Effect.fail(bad("the embeddings differ in length"))
        const tokens = response.usage?.prompt_tokens
        return Effect.succeed({ vectors: all, inputTokens: typeof tokens === "number" && Number.isFinite(tokens) ? tokens : 0 })
      }))
  }
}
