/**
 * Row mapping for SqliteMemoryStore: messages to columns (with the size limit and the exact-round-trip
 * rules) and rows back to domain values.
 */
import { Effect, Schema } from "effect"
import type { ItemMeta } from "../../domain/memory/context.ts"
import { InvalidInput } from "../../domain/memory/errors.ts"
import { StorageError } from "../../domain/storage/errors.ts"
import { bytesProblem, storedBlocks } from "../../domain/memory/storedSize.ts"
import {
  Content,
  estimateMessageTokens,
  hasCjk,
  type Message,
  messageText,
  type NewMessage,
  type Role,
  toolResultIds
} from "../../domain/message.ts"
import type { Conversation, StoredMessage, StoredSummary } from "../../services/MemoryStore.ts"

export { storageError } from "../sql/errors.ts"

export const decodeContent = Schema.decodeUnknownSync(Content)
/**
 * Messages per INSERT statement (10 parameters each; SQLite allows 32,766). Each statement costs an
 * FTS5 segment flush (see SqliteMemoryStore.insertEncoded), so larger is faster; but the driver caches
 * prepared statements by their text, i.e. by row count, and a 1,000-row INSERT is about 1 MiB of
 * compiled program, so this also bounds what a cache of odd-sized batches can hold.
 */
export const INSERT_BATCH = 1_000

export interface EncodedMessage {
  readonly role: Role
  readonly blocks: string | null
  readonly text: string
  readonly tokens: number
  readonly hasToolResults: boolean
  readonly hasCjk: boolean
  readonly createdAt: number
  readonly message: Message
}

export const encodeMessage = (m: NewMessage, now: number, index: number): EncodedMessage | InvalidInput => {
  const blocks = storedBlocks(m.content)
  // The content itself when `blocks` is null; else derived search text, without U+0000 (which
  // PostgreSQL's text cannot hold; a string holding one is kept in `blocks`).
  const text = blocks === null ? messageText(m) : messageText(m).replaceAll("\u0000", "")
  // UTF-8 bytes of what the message is stored as (its JSON blocks, or its string): `.length` counts
  // UTF-16 units and would let 3 × the limit of CJK text through; the derived search text is not
  // the message and does not count against it.
  const tooBig = bytesProblem(Buffer.byteLength(blocks ?? text, "utf8"))
  if (tooBig !== undefined) return new InvalidInput({ reason: `message ${index + 1} is ${tooBig}` })
  const createdAt = m.createdAt ?? now
  if (!Number.isFinite(createdAt)) return new InvalidInput({ reason: `message ${index + 1} has an invalid timestamp` })
  return {
    role: m.role,
    blocks,
    text,
    tokens: estimateMessageTokens(m),
    hasToolResults: toolResultIds(m).length > 0,
    hasCjk: hasCjk(text),
    createdAt,
    message: { role: m.role, content: m.content }
  }
}

export const ConversationRow = Schema.Struct({
  id: Schema.Number,
  session_key: Schema.String,
  agent_id: Schema.String,
  user_id: Schema.String,
  created_at: Schema.Number,
  updated_at: Schema.Number,
  reviewed_seq: Schema.Number,
  info: Schema.String
})
export const decodeConversation = (r: typeof ConversationRow.Type): Conversation => ({
  id: r.id,
  sessionKey: r.session_key,
  agentId: r.agent_id,
  userId: r.user_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  reviewedSeq: r.reviewed_seq,
  info: JSON.parse(r.info) as Record<string, unknown>
})
export const decodeConversationRows = Schema.decodeUnknownEffect(Schema.Array(ConversationRow))

export interface MessageRow {
  readonly id: number
  readonly seq: number
  readonly role: Role
  readonly blocks: string | null
  readonly text: string
  readonly token_count: number
  readonly created_at: number
}
export const toStored = (r: MessageRow): StoredMessage => ({
  id: r.id,
  seq: r.seq,
  role: r.role,
  message: { role: r.role, content: r.blocks === null ? r.text : decodeContent(JSON.parse(r.blocks)) },
  tokens: r.token_count,
  createdAt: r.created_at
})
export const toStoredMessages = (rows: ReadonlyArray<MessageRow>) =>
  Effect.try({
    try: () => rows.map(toStored),
    catch: (e) => new StorageError({ operation: "read messages", reason: `a stored message is damaged: ${String(e)}` })
  })

export interface SummaryRow {
  readonly id: number
  readonly conversation_id: number
  readonly session_key: string
  readonly user_id: string
  readonly kind: "leaf" | "condensed"
  readonly depth: number
  readonly mode: "normal" | "aggressive" | "truncated"
  readonly content: string
  readonly token_count: number
  readonly source_token_count: number
  readonly earliest_at: number
  readonly latest_at: number
  readonly first_seq: number
  readonly last_seq: number
  readonly created_at: number
}
export const toSummary = (r: SummaryRow): StoredSummary => ({
  id: r.id,
  conversationId: r.conversation_id,
  sessionKey: r.session_key,
  userId: r.user_id,
  kind: r.kind,
  depth: r.depth,
  mode: r.mode,
  content: r.content,
  tokenCount: r.token_count,
  sourceTokenCount: r.source_token_count,
  earliestAt: r.earliest_at,
  latestAt: r.latest_at,
  firstSeq: r.first_seq,
  lastSeq: r.last_seq,
  createdAt: r.created_at
})

export const toItem = (r: ReadonlyArray<unknown>): ItemMeta => {
  const messageId = r[1] as number | null
  return {
    position: r[0] as number,
    kind: messageId === null ? "summary" : "message",
    refId: messageId ?? (r[2] as number),
    tokens: r[3] as number,
    continuesUnit: r[4] === 1,
    depth: r[5] as number
  }
}

