/**
 * One reply in a Telegram chat (the shared reply writer, shared/reply.ts, with Telegram's parts):
 * streamed as plain text into one message edited at most every EDIT_INTERVAL_MS (Telegram allows
 * about one edit per second per chat); when the turn is done the whole answer is rendered to
 * Telegram HTML and split at 4,096 UTF-16 units on paragraph or code-fence boundaries
 * (domain/channels), each part with its plain text, sent instead when Telegram cannot parse the HTML.
 */
import { Effect } from "effect"
import type { Api } from "grammy"
import type { InlineKeyboardMarkup } from "grammy/types"
import type { Choices } from "../../../domain/runtime/types.ts"
import { toPlainText, toTelegramHtml } from "../../../domain/channels/markdown.ts"
import { splitPlain, splitSources } from "../../../domain/channels/split.ts"
import type { ReplyWriter } from "../shared/inbound.ts"
import { makeReplyWriter, type ReplyPart } from "../shared/reply.ts"
import { call } from "./api.ts"

/** Telegram's limit for one message, in UTF-16 code units. */
export const TELEGRAM_LIMIT = 4096
/** The least time between two edits of a streaming message. */
export const EDIT_INTERVAL_MS = 1_200
/** While streaming, the preview stops growing past this (the final split takes over). */
const PREVIEW_LIMIT = 4_000

export interface ReplyTarget {
  readonly api: Api
  readonly chatId: number
  /** The inbound message this answers (threads the reply in groups). */
  readonly replyTo?: number | undefined
  /** Message ids written into before (a reply resumed after a restart). */
  readonly existing: ReadonlyArray<string>
  /** Called with every message id list as it grows. */
  readonly onMessages: (ids: ReadonlyArray<string>) => Effect.Effect<void>
}

/**
 * An answer as Telegram messages: cut where its HTML fits 4,096 units, each part with the plain
 * text of the same source, sent instead when Telegram refuses the HTML (plain text is never longer
 * than its HTML: no tags, no escapes; cut to the limit if it were).
 */
export const telegramParts = (md: string): ReadonlyArray<ReplyPart> =>
  splitSources(md, TELEGRAM_LIMIT, toTelegramHtml).map((source) => {
    const html = toTelegramHtml(source)
    const plain = toPlainText(source)
    return { rich: html, plain: plain.trim() === "" ? html : splitPlain(plain, TELEGRAM_LIMIT)[0] ?? html }
  })

/** Telegram's limit for a button's callback data, in bytes. */
const CALLBACK_DATA_BYTES = 64

/**
 * A command's options as an inline keyboard, one button per row; a press sends the command with the
 * option's number (`/model 3`), which always fits Telegram's 64 bytes of callback data.
 */
export const keyboardOf = (choices: Choices): InlineKeyboardMarkup => ({
  inline_keyboard: choices.options.map((o, i) => [{
    text: `${o.current ? "✓ " : ""}${o.label}`.slice(0, 64),
    callback_data: `/${choices.command} ${i + 1}`.slice(0, CALLBACK_DATA_BYTES)
  }])
})

/** Callback data our keyboards send. */
export const PICK_DATA = /^\/(model|agent) \d{1,4}$/

export const makeReply = (t: ReplyTarget): Effect.Effect<ReplyWriter> =>
  makeReplyWriter({
    platform: "telegram",
    limit: TELEGRAM_LIMIT,
    parts: telegramParts,
    editIntervalMs: EDIT_INTERVAL_MS,
    previewLimit: PREVIEW_LIMIT,
    existing: t.existing,
    onMessages: t.onMessages,
    send: (text, html, index) =>
      call("sendMessage", (signal) =>
        t.api.sendMessage(t.chatId, text, {
          ...(html ? { parse_mode: "HTML" as const } : {}),
          ...(t.replyTo === undefined || index > 0
            ? {}
            : { reply_parameters: { message_id: t.replyTo, allow_sending_without_reply: true } }),
          link_preview_options: { is_disabled: true }
        }, signal)).pipe(Effect.map((m) => String(m.message_id))),
    choices: (id, choices) =>
      call("editMessageReplyMarkup", (signal) =>
        t.api.editMessageReplyMarkup(t.chatId, Number(id), { reply_markup: keyboardOf(choices) }, signal)).pipe(
          Effect.asVoid,
          Effect.catchIf((e) => e.kind === "unchanged", () => Effect.void)
        ),
    edit: (id, text, html) =>
      call("editMessageText", (signal) =>
        t.api.editMessageText(t.chatId, Number(id), text, {
          ...(html ? { parse_mode: "HTML" as const } : {}),
          link_preview_options: { is_disabled: true }
        }, signal)).pipe(
          Effect.asVoid,
          // The same text again is not an error for us.
          Effect.catchIf((e) => e.kind === "unchanged", () => Effect.void)
        )
  })
