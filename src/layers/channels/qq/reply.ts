/**
 * One reply on QQ (the shared reply writer, shared/reply.ts, without `edit`: QQ cannot edit a
 * message, so nothing streams and the answer is sent when the turn is done).
 *
 * - Passive replies: POST /v2/users/{openid}/messages or /v2/groups/{group_openid}/messages with
 *   `msg_id` (the message answered) and `msg_seq` 1, 2, 3… (the part's place in the reply: QQ refuses
 *   a repeated msg_id + msg_seq, so a reply resumed after a restart continues the numbering, and a
 *   part QQ already has — sent just before a crash, its id not yet recorded — counts as sent).
 * - Plain text (msg_type 0): QQ's Markdown (msg_type 2) needs a permission most bots lack, so the
 *   Markdown answer is rendered to plain text (domain/channels/markdown.ts `toPlainText`).
 * - Parts of at most QQ_LIMIT characters, split on paragraph / code-fence boundaries. QQ documents
 *   no length limit, only that one message may be answered at most 5 times (MAX_REPLIES): an answer
 *   longer than 5 parts is cut in its 5th with a line saying so; parts past the 5th (notices after a
 *   full answer) are not sent, and that is logged.
 */
import { Effect } from "effect"
import { toPlainText } from "../../../domain/channels/markdown.ts"
import { splitForPlatform, splitPlain } from "../../../domain/channels/split.ts"
import type { ReplyWriter } from "../shared/inbound.ts"
import { makeReplyWriter, type ReplyPart } from "../shared/reply.ts"
import type { PlatformCallError } from "../shared/calls.ts"
import type { QqApi } from "./api.ts"

/** anna's limit for one QQ message, in UTF-16 code units (QQ documents none). */
export const QQ_LIMIT = 2_000
/** QQ answers one message at most this many times (passive replies). */
export const MAX_REPLIES = 5
/** QQ's error code for a msg_id + msg_seq it already has. */
export const CODE_DUPLICATE_SEQ = 40054005

const CUT_NOTE = "[the answer is longer: QQ allows 5 messages per reply]"

/** A whole Markdown answer as at most `max` plain-text parts. */
export const qqParts = (md: string, max: number = MAX_REPLIES): ReadonlyArray<ReplyPart> => {
  const chunks = splitForPlatform(md, QQ_LIMIT, toPlainText)
  const kept = chunks.length <= max
    ? chunks
    : [...chunks.slice(0, max - 1), `${splitPlain(chunks[max - 1] ?? "", QQ_LIMIT - CUT_NOTE.length - 2)[0] ?? ""}\n\n${CUT_NOTE}`]
  return kept.map((plain) => ({ rich: undefined, plain }))
}

export interface QqReplyTarget {
  readonly api: QqApi
  readonly to: { readonly kind: "users" | "groups"; readonly openid: string }
  /** The message answered (its passive-reply `msg_id`). */
  readonly msgId: string
  readonly existing: ReadonlyArray<string>
  readonly onMessages: (ids: ReadonlyArray<string>) => Effect.Effect<void>
}

/** Sends one part as the passive reply number `index + 1`; its id (`seq:N` when QQ had it already). */
export const sendPart = (t: QqReplyTarget, text: string, index: number): Effect.Effect<string, PlatformCallError> => {
  const seq = index + 1
  if (index >= MAX_REPLIES) {
    return Effect.logWarning(`qq: reply to ${t.msgId}: part ${seq} not sent (QQ allows ${MAX_REPLIES} replies to one message)`).pipe(
      Effect.as(`unsent:${seq}`)
    )
  }
  return t.api.sendMessage(t.to, { content: text, msg_type: 0, msg_id: t.msgId, msg_seq: seq }).pipe(
    Effect.map((id) => id ?? `seq:${seq}`),
    Effect.catchIf((e) => e.status === CODE_DUPLICATE_SEQ, () =>
      Effect.logInfo(`qq: reply ${seq} to ${t.msgId} was already delivered`).pipe(Effect.as(`seq:${seq}`)))
  )
}

export const makeReply = (t: QqReplyTarget): Effect.Effect<ReplyWriter> =>
  makeReplyWriter({
    platform: "qq",
    limit: QQ_LIMIT,
    parts: (md) => qqParts(md),
    existing: t.existing,
    onMessages: t.onMessages,
    send: (text, _rich, index) => sendPart(t, text, index)
  })
