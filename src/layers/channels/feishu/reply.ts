/**
 * One reply in a Feishu/Lark chat as interactive cards (the shared reply writer, shared/reply.ts):
 *
 * - Feishu has no typing indicator: a reply starts as a card saying "thinking…" (sent at once, as a
 *   reply to the inbound message in groups), which is the indicator. That card is then updated
 *   (`PATCH /open-apis/im/v1/messages/:id`; cards are sent with `update_multi` so they can be) with
 *   the answer so far, at most every EDIT_INTERVAL_MS (Feishu allows 5 updates a second per
 *   message; we stay near one), and finally with the answer's first part.
 * - The final answer is card Markdown (the card's `markdown` element), split at CARD_LIMIT
 *   characters on paragraph / code-fence boundaries (a card request may hold 30 KB, and the card is
 *   JSON inside JSON); parts after the first are new cards. A card Feishu refuses to build is sent
 *   again as plain text (a `plain_text` element).
 * - Every send carries a `uuid` derived from the inbound message and the part's place, so a send
 *   retried after a lost answer is not sent twice.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { toPlainText, wellFormed } from "../../../domain/channels/markdown.ts"
import { splitPlain, splitSources } from "../../../domain/channels/split.ts"
import type { ReplyWriter } from "../shared/inbound.ts"
import type { Choices } from "../../../domain/runtime/types.ts"
import { makeReplyWriter, type ReplyPart } from "../shared/reply.ts"
import { type Destination, type FeishuClient, patchCard, sendMessage } from "./api.ts"
import { PICK_CHAT, PICK_VALUE } from "./events.ts"

/** Characters of Markdown in one card. */
export const CARD_LIMIT = 6_000
/** The least time between two updates of a streaming card. */
export const EDIT_INTERVAL_MS = 1_000
/** What the card says before the answer starts. */
export const THINKING = "thinking…"

/**
 * Markdown as Feishu's card `markdown` element takes it: the same syntax, with `<` written as
 * `&lt;` outside code so that nothing the model writes becomes a tag (`<at id=all>`, `<font>`),
 * and headings (which the element does not render) as bold lines.
 */
export const toFeishuMarkdown = (md: string): string => {
  const lines = wellFormed(md).split("\n")
  let fence: string | undefined
  return lines.map((line) => {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence === undefined && f !== undefined) {
      fence = f
      return line
    }
    if (fence !== undefined) {
      if (f !== undefined && f[0] === fence[0] && f.length >= fence.length) fence = undefined
      return line
    }
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    const shown = heading === undefined || heading === "" ? line : `**${heading}**`
    // Inline code keeps its `<`; the rest is escaped.
    return shown.split(/(`[^`]*`)/).map((piece, i) => (i % 2 === 1 ? piece : piece.replaceAll("<", "&lt;"))).join("")
  }).join("\n")
}

/** A card showing `text` as Markdown (`rich`) or as plain text. */
export const card = (text: string, rich: boolean): string =>
  JSON.stringify({
    config: { wide_screen_mode: true, update_multi: true },
    elements: [rich ? { tag: "markdown", content: text } : { tag: "div", text: { tag: "plain_text", content: text } }]
  })

/** Buttons of one picker, at most (a card holds a limited number of elements). */
export const MAX_BUTTONS = 40

/**
 * A card (`content` as sent) with a command's options as buttons under it, one a row, the current
 * one marked "✓ " and primary; a press sends `{anna_pick: "/model 3", anna_chat}` (the option's
 * number) to the card callback.
 */
export const withButtons = (content: string, choices: Choices, isGroup: boolean): string => {
  let v: unknown
  try {
    v = JSON.parse(content)
  } catch {
    v = undefined
  }
  const base = typeof v === "object" && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {}
  const elements = Array.isArray(base.elements) ? base.elements : []
  const rows = choices.options.slice(0, MAX_BUTTONS).map((o, i) => ({
    tag: "action",
    actions: [{
      tag: "button",
      text: { tag: "plain_text", content: `${o.current ? "✓ " : ""}${o.label}`.slice(0, 100) },
      type: o.current ? "primary" : "default",
      value: { [PICK_VALUE]: `/${choices.command} ${i + 1}`, [PICK_CHAT]: isGroup ? "group" : "p2p" }
    }]
  }))
  return JSON.stringify({ ...base, config: { wide_screen_mode: true, update_multi: true }, elements: [...elements, ...rows] })
}

/** An answer as cards: each part's Markdown within CARD_LIMIT, with its plain text. */
export const feishuParts = (md: string): ReadonlyArray<ReplyPart> =>
  splitSources(md, CARD_LIMIT, toFeishuMarkdown).map((source) => {
    const rich = toFeishuMarkdown(source)
    const plain = toPlainText(source)
    return { rich, plain: plain.trim() === "" ? rich : splitPlain(plain, CARD_LIMIT)[0] ?? rich }
  })

/** The idempotency key of part `index` of the reply to `key` (at most 50 characters). */
export const uuidFor = (key: string, index: number): string => createHash("sha256").update(`${key}#${index}`).digest("hex").slice(0, 40)

export interface ReplyTarget {
  readonly client: FeishuClient
  /** Where the first card goes (a reply to the inbound message, or a chat / user). */
  readonly first: Destination
  /** Where the other cards go. */
  readonly rest: Destination
  /** The inbound message's key (idempotency of the sends). */
  readonly key: string
  /** Card ids written into before (a reply resumed after a restart). */
  readonly existing: ReadonlyArray<string>
  readonly onMessages: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  /** Send the "thinking…" card at once (a turn); false for a notification. */
  readonly thinking: boolean
  /** Native pickers: the chat's kind, and who is told a picker card's content without its buttons. */
  readonly picker?: {
    readonly isGroup: boolean
    readonly shown: (messageId: string, content: string) => void
  } | undefined
}

export const makeReply = (t: ReplyTarget) =>
  Effect.gen(function*() {
    // The latest content of each card of this reply (a picker's buttons go under it).
    const contents = new Map<string, string>()
    const send = (text: string, rich: boolean, index: number) =>
      sendMessage(t.client, index === 0 ? t.first : t.rest, "interactive", card(text, rich), uuidFor(t.key, index)).pipe(
        Effect.tap((id) => Effect.sync(() => contents.set(id, card(text, rich))))
      )
    const picker = t.picker
    let existing = t.existing
    if (t.thinking && existing.length === 0) {
      const id = yield* send(THINKING, false, 0)
      existing = [id]
      yield* t.onMessages(existing)
    }
    const writer: ReplyWriter = yield* makeReplyWriter({
      platform: "feishu",
      limit: CARD_LIMIT,
      parts: feishuParts,
      editIntervalMs: EDIT_INTERVAL_MS,
      previewLimit: CARD_LIMIT - 96,
      existing,
      onMessages: t.onMessages,
      send,
      edit: (id, text, rich) => patchCard(t.client, id, card(text, rich)).pipe(Effect.tap(() => Effect.sync(() => contents.set(id, card(text, rich))))),
      richDiffers: true,
      choices: picker === undefined ? undefined : (id, choices) =>
        Effect.gen(function*() {
          const content = contents.get(id)
          if (content === undefined) return
          yield* patchCard(t.client, id, withButtons(content, choices, picker.isGroup))
          picker.shown(id, content)
        }).pipe(Effect.catch((e) => Effect.logWarning(`feishu: the ${choices.command} picker's buttons were not added: ${e.description}`)))
    })
    return writer
  })
