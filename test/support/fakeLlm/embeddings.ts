/**
 * The fake's `POST /v1/embeddings` (OpenAI's wire format, as Ollama, vLLM and llama.cpp serve it):
 * deterministic vectors, a hashed bag of the lower-cased words of each input into DIMS (256) dimensions,
 * L2-normalised. Words of SYNONYMS count as the word they stand for, so a test can make a text
 * that is near a query in meaning and shares none of its words ("automobile" ~ "car"). Answers
 * `encoding_format: "base64"` (the openai SDK's default: float32 little-endian) and "float".
 */
import type { ServerResponse } from "node:http"
import { json } from "./wire.ts"

export const DIMS = 256

/** Words the fake embeds as another (its notion of meaning). */
export const SYNONYMS: Readonly<Record<string, string>> = {
  automobile: "car",
  vehicle: "car",
  sedan: "car",
  physician: "doctor",
  medic: "doctor",
  feline: "cat",
  kitten: "cat"
}

const fnv1a = (s: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

export const words = (text: string): ReadonlyArray<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => SYNONYMS[w] ?? w)

/** The fake's vector of a text. */
export const fakeEmbedding = (text: string): Float32Array => {
  const v = new Float32Array(DIMS)
  for (const w of words(text)) v[fnv1a(w) % DIMS] = (v[fnv1a(w) % DIMS] ?? 0) + 1
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0))
  return norm === 0 ? v : v.map((x) => x / norm)
}

const base64 = (v: Float32Array): string => {
  const bytes = Buffer.alloc(v.length * 4)
  for (const [i, x] of v.entries()) bytes.writeFloatLE(x, i * 4)
  return bytes.toString("base64")
}

/** Answers one embeddings request (400 for a malformed one, as OpenAI does). */
export const respondEmbeddings = (body: unknown, res: ServerResponse): void => {
  const b = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {}
  const model = typeof b.model === "string" ? b.model : ""
  const input = typeof b.input === "string" ? [b.input] : Array.isArray(b.input) ? b.input : undefined
  if (model === "" || input === undefined || input.length === 0 || !input.every((s) => typeof s === "string" && s !== "")) {
    json(res, 400, { error: { message: "'input' must be a non-empty string or array of non-empty strings", type: "invalid_request_error", code: null, param: "input" } })
    return
  }
  const format = b.encoding_format === "base64" ? "base64" : "float"
  const texts = input as ReadonlyArray<string>
  const tokens = texts.reduce((n, t) => n + Math.max(1, words(t).length), 0)
  json(res, 200, {
    object: "list",
    data: texts.map((t, index) => {
      const v = fakeEmbedding(t)
      return { object: "embedding", index, embedding: format === "base64" ? base64(v) : Array.from(v) }
    }),
    model,
    usage: { prompt_tokens: tokens, total_tokens: tokens }
  })
}
