/**
 * The stored form of a message and its size limit (MAX_MESSAGE_BYTES), shared by the store (which
 * refuses an oversized message), `anna memory import` (which checks every line before storing any)
 * and the runtime (which splits an oversized model reply losslessly instead of losing it).
 */
import type { Content, ContentBlock, Message } from "../message.ts"
import { MAX_MESSAGE_BYTES } from "./types.ts"

/**
 * A lone UTF-16 surrogate (e.g. text cut in the middle of an emoji) does not survive SQLite's UTF-8
 * text: it comes back as U+FFFD; and PostgreSQL's text cannot hold U+0000 at all. JSON escapes both
 * (`\udfff`, `\u0000`), so such a string is kept as JSON in `blocks` (a JSON string is valid
 * Content) and comes back exactly as it was given.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const notAsText = (s: string): boolean => s.includes("\u0000") || LONE_SURROGATE.test(s)

/** The JSON kept in the `blocks` column, or null when the content is a plain string stored as text. */
export const storedBlocks = (content: Content): string | null =>
  typeof content === "string" && !notAsText(content) ? null : JSON.stringify(content)

/** UTF-8 bytes of what the message is stored as (its JSON blocks, or its string). */
export const storedBytes = (content: Content): number => {
  const blocks = storedBlocks(content)
  return Buffer.byteLength(blocks ?? (typeof content === "string" ? content : ""), "utf8")
}

const mib = (bytes: number) => (bytes / 1048576).toFixed(1)

/** Why a message of `bytes` stored bytes cannot be stored as one message (too big), or undefined. */
export const bytesProblem = (bytes: number): string | undefined =>
  bytes > MAX_MESSAGE_BYTES
    ? `${mib(bytes)} MiB; the limit is ${MAX_MESSAGE_BYTES / 1048576} MiB`
    : undefined

/** Why the message cannot be stored as one message (too big), or undefined. */
export const sizeProblem = (content: Content): string | undefined => bytesProblem(storedBytes(content))

/** Room left for the JSON around one text piece (`[{"type":"text","text":…}]`) in a message. */
const PIECE_BYTES = MAX_MESSAGE_BYTES - 1024

/** Cuts `text` into pieces whose JSON string form fits `limit` bytes, never inside a surrogate pair. */
const cutText = (text: string, limit: number): Array<string> => {
  const pieces: Array<string> = []
  let start = 0
  while (start < text.length) {
    let end = Math.min(text.length, start + limit)
    for (;;) {
      if (end < text.length && end > start + 1) {
        const c = text.charCodeAt(end - 1)
        if (c >= 0xd800 && c <= 0xdbff) end-- // keep a surrogate pair together
      }
      const bytes = Buffer.byteLength(JSON.stringify(text.slice(start, end)), "utf8")
      if (bytes <= limit || end - start <= 1) break
      // Shrink in proportion (escapes and multi-byte characters), a little more to converge fast.
      end = start + Math.max(1, Math.floor(((end - start) * limit) / bytes * 0.99))
    }
    pieces.push(text.slice(start, end))
    start = end
  }
  return pieces
}

/**
 * A message as one or more messages that each fit the stored-size limit, losslessly: their text,
 * read in order, is the message's text, and every non-text block is kept whole (in order). A
 * message that fits is returned as it is. A single non-text block over the limit cannot be split;
 * it stays whole and the store refuses it.
 */
export const splitForStorage = (message: Message): ReadonlyArray<Message> => {
  if (sizeProblem(message.content) === undefined) return [message]
  const blocks: ReadonlyArray<ContentBlock> = typeof message.content === "string"
    ? [{ type: "text", text: message.content }]
    : message.content
  const pieces: Array<ContentBlock> = []
  for (const b of blocks) {
    if (b.type === "text" && storedBytes([b]) > PIECE_BYTES) {
      for (const t of cutText(b.text, PIECE_BYTES)) pieces.push({ type: "text", text: t })
    } else pieces.push(b)
  }
  const out: Array<Message> = []
  let current: Array<ContentBlock> = []
  let currentBytes = 2
  for (const p of pieces) {
    const bytes = storedBytes([p]) - 1 // its JSON plus a comma, less the brackets
    if (current.length > 0 && currentBytes + bytes > MAX_MESSAGE_BYTES) {
      out.push({ role: message.role, content: current })
      current = []
      currentBytes = 2
    }
    current.push(p)
    currentBytes += bytes
  }
  if (current.length > 0) out.push({ role: message.role, content: current })
  // A plain-string message stays plain strings, so each part reads back as the text it was.
  return typeof message.content === "string"
    ? out.map((m) => ({ role: m.role, content: typeof m.content === "string" ? m.content : m.content.map((b) => b.type === "text" ? b.text : "").join("") }))
    : out
}
