/**
 * Dense retrieval's pure parts (issue 25): vectors as bytes and base64 (float32, little-endian),
 * cosine similarity, the text a row is embedded from, and reciprocal-rank fusion of the lexical
 * ranking with the dense one. No I/O.
 */

/** A row's text is cut to this many characters before it is embedded (about 1,000–2,000 tokens: within every common embedding model's input). */
export const EMBED_CHARS = 4_000

/** Reciprocal-rank fusion's constant (Cormack et al. 2009): ranks past the first few weigh little, whatever the list. */
export const RRF_K = 60

/** The text a row is embedded from: collapsed whitespace, at most EMBED_CHARS characters. */
export const embeddingText = (text: string): string => {
  const t = text.replace(/\s+/g, " ").trim()
  return t.length > EMBED_CHARS ? t.slice(0, EMBED_CHARS) : t
}

/** The vector as stored: `dims` float32 values, little-endian (whatever the machine's order). */
export const vectorBytes = (v: Float32Array): Uint8Array => {
  const bytes = new Uint8Array(v.length * 4)
  const view = new DataView(bytes.buffer)
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i] ?? 0, true)
  return bytes
}

/** Stored bytes → the vector; undefined when they are no whole number of float32 values. */
export const vectorOf = (bytes: Uint8Array): Float32Array | undefined => {
  if (bytes.length === 0 || bytes.length % 4 !== 0) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const v = new Float32Array(bytes.length / 4)
  for (let i = 0; i < v.length; i++) v[i] = view.getFloat32(i * 4, true)
  return v
}

export const vectorBase64 = (v: Float32Array): string => Buffer.from(vectorBytes(v)).toString("base64")

export const vectorFromBase64 = (text: string): Float32Array | undefined =>
  /^[A-Za-z0-9+/]*={0,2}$/.test(text) ? vectorOf(new Uint8Array(Buffer.from(text, "base64"))) : undefined

/** Unit length (a zero vector stays zero), so a dot product is the cosine. */
export const normalized = (v: Float32Array): Float32Array => {
  let sum = 0
  for (let i = 0; i < v.length; i++) sum += (v[i] ?? 0) * (v[i] ?? 0)
  const norm = Math.sqrt(sum)
  if (norm === 0 || !Number.isFinite(norm)) return v
  const out = new Float32Array(v.length)
  for (let i = 0; i < v.length; i++) out[i] = (v[i] ?? 0) / norm
  return out
}

/**
 * Cosine of a unit query and a stored vector read straight from its bytes (no copy: the scan reads
 * thousands). Vectors of another length score -Infinity (a model's dimensions changed under it).
 */
export const cosineBytes = (query: Float32Array, bytes: Uint8Array): number => {
  if (bytes.length !== query.length * 4) return Number.NEGATIVE_INFINITY
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let dot = 0
  let norm = 0
  for (let i = 0; i < query.length; i++) {
    const x = view.getFloat32(i * 4, true)
    dot += (query[i] ?? 0) * x
    norm += x * x
  }
  return norm === 0 ? 0 : dot / Math.sqrt(norm)
}

/**
 * Reciprocal-rank fusion: each key scores the sum of 1 / (k + rank) over the lists it is in (rank
 * from 1), best first; ties keep the first list's order. Lists hold keys, best first.
 */
export const reciprocalRankFusion = (
  lists: ReadonlyArray<ReadonlyArray<string>>,
  k: number = RRF_K
): ReadonlyArray<{ readonly key: string; readonly score: number }> => {
  const scores = new Map<string, number>()
  for (const list of lists) {
    for (const [i, key] of list.entries()) scores.set(key, (scores.get(key) ?? 0) + 1 / (k + i + 1))
  }
  return Array.from(scores, ([key, score]) => ({ key, score })).sort((a, b) => b.score - a.score)
}
