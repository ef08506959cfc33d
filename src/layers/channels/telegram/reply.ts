/**
 * One reply in a Telegram chat, written as the turn streams: the text so far is shown in one message
 * that is edited at most every EDIT_INTERVAL (Telegram allows about one edit per second per chat),
 * as plain text while it streams; when the turn is done the whole answer is rendered to Telegram
 * HTML and split at 4,096 UTF-16 units on paragraph or code-fence boundaries (domain/channels), the
 * first part replacing the streamed message and the rest sent after it. A part Telegram cannot
 * parse is sent again as plain text. Every message id is recorded with the ledger as soon as it
 * exists, so a reply resumed after a crash edits the same messages (`existing`).
 *
 * Notices (tools off, compaction, the turn stopped) follow the answer as their own lines; tool
 * activity is never shown.
 */
import { Clock, Effect, Ref } from "effect"
import type { Api } from "grammy"
import { toPlainText, toTelegramHtml } from "../../../domain/channels/markdown.ts"
import { splitPlain, splitSources } from "../../../domain/channels/split.ts"
import type { TurnEvent } from "../../../domain/runtime/types.ts"
import { call, type TelegramCallError } from "./api.ts"

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
  readonly existing: ReadonlyArray<number>
  /** Called with every message id list as it grows. */
  readonly onMessages: (ids: ReadonlyArray<number>) => Effect.Effect<void>
}

interface State {
  readonly ids: ReadonlyArray<number>
  /** The text each message shows now (by index). */
  readonly shown: ReadonlyArray<string>
  readonly lastEditAt: number
}

const sendText = (t: ReplyTarget, text: string, html: boolean) =>
  call("sendMessage", (signal) =>
    t.api.sendMessage(t.chatId, text, {
      ...(html ? { parse_mode: "HTML" as const } : {}),
      ...(t.replyTo === undefined ? {} : { reply_parameters: { message_id: t.replyTo, allow_sending_without_reply: true } }),
      link_preview_options: { is_disabled: true }
    }, signal)).pipe(Effect.map((m) => m.message_id))

const editText = (t: ReplyTarget, id: number, text: string, html: boolean): Effect.Effect<void, TelegramCallError> =>
  call("editMessageText", (signal) =>
    t.api.editMessageText(t.chatId, id, text, {
      ...(html ? { parse_mode: "HTML" as const } : {}),
      link_preview_options: { is_disabled: true }
    }, signal)).pipe(
      Effect.asVoid,
      // The same text again is not an error for us.
      Effect.catchIf((e) => e.kind === "unchanged", () => Effect.void)
    )

/** Writes `html` (or, when Telegram cannot parse it, `plain`) into message `index`, sending it if it does not exist yet. */
const put = (t: ReplyTarget, state: Ref.Ref<State>, index: number, html: string | undefined, plain: string) =>
  Effect.gen(function*() {
    const s = yield* Ref.get(state)
    const id = s.ids[index]
    const write = (text: string, asHtml: boolean) =>
      id === undefined ? sendText(t, text, asHtml) : editText(t, id, text, asHtml).pipe(Effect.as(id))
    const written = yield* (html === undefined ? write(plain, false) : write(html, true).pipe(
      Effect.catchIf((e) => e.kind === "format", (e) =>
        Effect.logWarning(`telegram: ${e.description}; sending that part as plain text`).pipe(Effect.andThen(write(plain, false))))
    ))
    if (id === undefined) {
      const ids = [...s.ids, written]
      yield* Ref.update(state, (x) => ({ ...x, ids }))
      yield* t.onMessages(ids)
    }
    yield* Ref.update(state, (x) => {
      const shown = [...x.shown]
      shown[index] = html ?? plain
      return { ...x, shown }
    })
  })

/**
 * An answer as Telegram messages: cut where its HTML fits 4,096 units, each part with the plain
 * text of the same source, sent instead when Telegram refuses the HTML (plain text is never longer
 * than its HTML: no tags, no escapes; cut to the limit if it were).
 */
export const telegramParts = (md: string): ReadonlyArray<{ readonly html: string; readonly plain: string }> =>
  splitSources(md, TELEGRAM_LIMIT, toTelegramHtml).map((source) => {
    const html = toTelegramHtml(source)
    const plain = toPlainText(source)
    return { html, plain: plain.trim() === "" ? html : splitPlain(plain, TELEGRAM_LIMIT)[0] ?? html }
  })

export interface ReplyWriter {
  /** Feed one event of the turn. */
  readonly event: (e: TurnEvent) => Effect.Effect<void, TelegramCallError>
  /** The turn is over: write the final answer and the notices. */
  readonly finish: Effect.Effect<void, TelegramCallError>
}

export const makeReply = (t: ReplyTarget) =>
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({ ids: t.existing, shown: [], lastEditAt: 0 })
    const answer = yield* Ref.make("")
    const notices = yield* Ref.make<ReadonlyArray<string>>([])

    const preview = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const s = yield* Ref.get(state)
      const text = (yield* Ref.get(answer)).trim()
      if (text === "" || text.length > PREVIEW_LIMIT || now - s.lastEditAt < EDIT_INTERVAL_MS) return
      if (s.shown[0] === text) return
      yield* Ref.update(state, (x) => ({ ...x, lastEditAt: now }))
      yield* put(t, state, 0, undefined, text)
    })

    const event = (e: TurnEvent): Effect.Effect<void, TelegramCallError> => {
      switch (e.type) {
        case "text":
          return Ref.update(answer, (a) => a + e.text).pipe(Effect.andThen(preview))
        case "notice":
          return Ref.update(notices, (n) => [...n, e.text])
        default:
          return Effect.void
      }
    }

    const finish = Effect.gen(function*() {
      const text = (yield* Ref.get(answer)).trim()
      const notes = yield* Ref.get(notices)
      const parts: Array<{ readonly html: string | undefined; readonly plain: string }> = []
      if (text !== "") parts.push(...telegramParts(text))
      for (const n of notes) for (const p of splitPlain(`[${n}]`, TELEGRAM_LIMIT)) parts.push({ html: undefined, plain: p })
      if (parts.length === 0) parts.push({ html: undefined, plain: "[no answer]" })
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i]
        if (part === undefined) continue
        yield* put(t, state, i, part.html, part.plain)
      }
    })

    const writer: ReplyWriter = { event, finish }
    return writer
  })
