/**
 * A reply as a platform's messages, written as the turn streams (issue 12, shared):
 *
 * - When the platform can edit a message (`edit`), the answer so far is shown in one message edited
 *   at most every `editIntervalMs` (plain text while it streams); otherwise nothing is sent until the
 *   turn is done.
 * - When the turn is done, the whole answer is cut into the platform's parts (`parts`: rendered to
 *   what it accepts and split at its limit on paragraph / code-fence boundaries, with each part's
 *   plain text); the first part replaces the streamed message, the rest follow. A part the platform
 *   refuses as badly formatted (`kind: "format"`) is written again as its plain text.
 * - A command's picker (/model, /agent) is attached to its first message where the platform has one.
 * - Notices (tools off, compaction, the turn stopped) follow the answer as their own `[lines]`; tool
 *   activity is never shown.
 * - A turn that starts over (`restart`, issue 28: its cluster node stopped mid-answer) drops what it
 *   gathered; a streamed message says so at once and is then rewritten by the new attempt.
 * - Every message id is told to `onMessages` as soon as it exists, so a reply resumed after a crash
 *   (`existing`) writes into the same messages: edited where the platform can edit, and where it
 *   cannot, the parts already sent are not sent again.
 */
import { Clock, Effect, Ref } from "effect"
import { splitPlain } from "../../../domain/channels/split.ts"
import { RESTARTED } from "../../../domain/runtime/restart.ts"
import type { Choices, TurnEvent } from "../../../domain/runtime/types.ts"
import type { PlatformCallError } from "./calls.ts"
import type { ReplyWriter } from "./inbound.ts"

/** One message of a final reply: `rich` in the platform's markup (undefined: plain only), `plain` its fallback. */
export interface ReplyPart {
  readonly rich: string | undefined
  readonly plain: string
}

export interface ReplyOps {
  readonly platform: string
  /** The platform's limit for one message (in its own unit; `parts` and notices are cut to it). */
  readonly limit: number
  /** Renders and splits a whole Markdown answer. */
  readonly parts: (markdown: string) => ReadonlyArray<ReplyPart>
  /** Sends a new message; its platform id. `index`: its place in the reply (0 = the first). */
  readonly send: (text: string, rich: boolean, index: number) => Effect.Effect<string, PlatformCallError>
  /** Replaces a message's text (absent: the platform cannot edit, so nothing streams). */
  readonly edit?: ((id: string, text: string, rich: boolean) => Effect.Effect<void, PlatformCallError>) | undefined
  readonly editIntervalMs?: number | undefined
  /** While streaming, the preview stops growing past this many characters (the final split takes over). */
  readonly previewLimit?: number | undefined
  /** Attaches a command's picker to the message `id` (absent: the platform has none; the text lists the options, numbered). */
  readonly choices?: ((id: string, choices: Choices) => Effect.Effect<void, PlatformCallError>) | undefined
  readonly existing: ReadonlyArray<string>
  readonly onMessages: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  /**
   * A rich message differs from a plain one with the same text (Feishu: a card's `markdown` element
   * against its `plain_text`), so the final rich part replaces a plain preview of the same text.
   */
  readonly richDiffers?: boolean | undefined
}

interface State {
  readonly ids: ReadonlyArray<string>
  /** What each message shows now (by index); unknown for messages of a resumed reply. */
  readonly shown: ReadonlyArray<string | undefined>
  readonly lastEditAt: number
}

/** Notices as plain parts, each cut to the limit. */
export const noticeParts = (notices: ReadonlyArray<string>, limit: number): ReadonlyArray<ReplyPart> =>
  notices.flatMap((n) => splitPlain(`[${n}]`, limit).map((plain) => ({ rich: undefined, plain })))

export const makeReplyWriter = (ops: ReplyOps) =>
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({ ids: ops.existing, shown: [], lastEditAt: Number.NEGATIVE_INFINITY })
    const answer = yield* Ref.make("")
    const notices = yield* Ref.make<ReadonlyArray<string>>([])
    const picker = yield* Ref.make<Choices | undefined>(undefined)
    const interval = ops.editIntervalMs ?? 1_200
    const previewLimit = ops.previewLimit ?? Math.max(1, ops.limit - 96)

    /** What a message shows, as compared to decide whether to write it again. */
    const shownAs = (text: string, rich: boolean): string => (ops.richDiffers === true ? `${rich ? "rich" : "plain"}:${text}` : text)

    const put = (index: number, part: ReplyPart) =>
      Effect.gen(function*() {
        const s = yield* Ref.get(state)
        const id = s.ids[index]
        const text = shownAs(part.rich ?? part.plain, part.rich !== undefined)
        if (id !== undefined && s.shown[index] === text) return
        // Without edits, a message already sent (before a restart) stays as it is.
        if (id !== undefined && ops.edit === undefined) return
        const write = (t: string, rich: boolean): Effect.Effect<string, PlatformCallError> =>
          id === undefined ? ops.send(t, rich, index) : (ops.edit?.(id, t, rich) ?? Effect.void).pipe(Effect.as(id))
        const written = yield* part.rich === undefined ? write(part.plain, false) : write(part.rich, true).pipe(
          Effect.catchIf((e) => e.kind === "format", (e) =>
            Effect.logWarning(`${ops.platform}: ${e.description}; sending that part as plain text`).pipe(
              Effect.andThen(write(part.plain, false))
            ))
        )
        if (id === undefined) {
          const ids = [...(yield* Ref.get(state)).ids, written]
          yield* Ref.update(state, (x) => ({ ...x, ids }))
          yield* ops.onMessages(ids)
        }
        yield* Ref.update(state, (x) => {
          const shown = [...x.shown]
          shown[index] = text
          return { ...x, shown }
        })
      })

    const preview = Effect.gen(function*() {
      if (ops.edit === undefined) return
      const now = yield* Clock.currentTimeMillis
      const s = yield* Ref.get(state)
      const text = (yield* Ref.get(answer)).trim()
      if (text === "" || text.length > previewLimit || now - s.lastEditAt < interval) return
      if (s.shown[0] === shownAs(text, false)) return
      yield* Ref.update(state, (x) => ({ ...x, lastEditAt: now }))
      yield* put(0, { rich: undefined, plain: text })
    })

    /**
     * The turn started over (restart.ts): what was gathered is dropped, and a streamed message says so
     * at once; the new attempt's preview and the final parts then write over it.
     */
    const restart = Effect.gen(function*() {
      yield* Ref.set(answer, "")
      yield* Ref.set(notices, [])
      yield* Ref.set(picker, undefined)
      const s = yield* Ref.get(state)
      if (ops.edit !== undefined && s.ids[0] !== undefined && s.shown[0] !== undefined) {
        yield* put(0, { rich: undefined, plain: `[${RESTARTED}]` })
      }
    })

    const event = (e: TurnEvent): Effect.Effect<void, PlatformCallError> => {
      switch (e.type) {
        case "text":
          return Ref.update(answer, (a) => a + e.text).pipe(Effect.andThen(preview))
        case "notice":
          return Ref.update(notices, (n) => [...n, e.text])
        case "choices":
          return Ref.set(picker, e.choices)
        case "restart":
          return restart
        default:
          return Effect.void
      }
    }

    const finish = Effect.gen(function*() {
      const text = (yield* Ref.get(answer)).trim()
      const parts: Array<ReplyPart> = []
      if (text !== "") parts.push(...ops.parts(text))
      parts.push(...noticeParts(yield* Ref.get(notices), ops.limit))
      if (parts.length === 0) parts.push({ rich: undefined, plain: "[no answer]" })
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i]
        if (part !== undefined) yield* put(i, part)
      }
      const choices = yield* Ref.get(picker)
      const first = (yield* Ref.get(state)).ids[0]
      if (choices !== undefined && choices.options.length > 0 && first !== undefined && ops.choices !== undefined) {
        yield* ops.choices(first, choices)
      }
    })

    const writer: ReplyWriter = { event, finish }
    return writer
  })
