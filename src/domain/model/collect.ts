/**
 * Folding a stream of ChatEvents into one assistant message (the fold is pure; `collectResponse`
 * runs it over a stream), and the request-shaping rules every provider needs (pure).
 */
import { Effect, Stream } from "effect"
import type { ContentBlock, Message } from "../message.ts"
import { type ChatEvent, type ChatResponse, emptyUsage, type StopReason, type Usage } from "./types.ts"

export interface CollectState {
  readonly blocks: ReadonlyArray<ContentBlock>
  readonly usage: Usage
  readonly stopReason: StopReason | undefined
}

export const initialCollect: CollectState = { blocks: [], usage: emptyUsage, stopReason: undefined }

/** Adds one event: text deltas extend the last text block, a finished tool call becomes a tool_use. */
export const collectEvent = (state: CollectState, event: ChatEvent): CollectState => {
  switch (event.type) {
    case "text_delta": {
      if (event.text === "") return state
      const last = state.blocks[state.blocks.length - 1]
      const blocks = last !== undefined && last.type === "text"
        ? [...state.blocks.slice(0, -1), { type: "text" as const, text: last.text + event.text }]
        : [...state.blocks, { type: "text" as const, text: event.text }]
      return { ...state, blocks }
    }
    case "tool_call_end":
      return {
        ...state,
        blocks: [...state.blocks, { type: "tool_use", id: event.id, name: event.name, input: toJson(event.input) }]
      }
    case "usage":
      return { ...state, usage: { ...state.usage, ...definedOnly(event.usage) } }
    case "stop":
      return { ...state, stopReason: event.reason }
    case "tool_call_start":
    case "tool_call_delta":
      return state
  }
}

const definedOnly = (u: Partial<Usage>): Partial<Usage> =>
  Object.fromEntries(Object.entries(u).filter(([, v]) => typeof v === "number")) as Partial<Usage>

type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [k: string]: Json }

/** Tool inputs are JSON by construction (parsed from JSON text); anything else becomes {}. */
const toJson = (value: unknown): Json => {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value
  if (typeof value === "number") return Number.isFinite(value) ? value : null
  if (Array.isArray(value)) return value.map(toJson)
  if (typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toJson(v)]))
  }
  return {}
}

export const finishCollect = (state: CollectState): ChatResponse => {
  const hasToolUse = state.blocks.some((b) => b.type === "tool_use")
  const message: Message = { role: "assistant", content: state.blocks }
  return { message, usage: state.usage, stopReason: state.stopReason ?? (hasToolUse ? "tool_use" : "end_turn") }
}

/**
 * Runs a stream to its end and returns the assistant message, usage and stop reason. `onEvent`, when
 * given, sees every event before it is folded in (to show text as it streams); its effect runs in
 * order, and the stream waits for it.
 */
export const collectResponse = <E, R, E2 = never, R2 = never>(
  stream: Stream.Stream<ChatEvent, E, R>,
  onEvent?: (event: ChatEvent) => Effect.Effect<void, E2, R2>
): Effect.Effect<ChatResponse, E | E2, R | R2> =>
  Stream.runFold(onEvent === undefined ? stream : Stream.tap(stream, onEvent), () => initialCollect, collectEvent).pipe(
    Effect.map(finishCollect)
  )

/** Parses accumulated tool-call argument text; an empty string means no arguments. */
export const parseToolArguments = (text: string): unknown => {
  if (text.trim() === "") return {}
  try {
    return JSON.parse(text)
  } catch {
    // A model that emitted broken JSON: keep what it said, so the tool can report the problem.
    return { _raw: text }
  }
}

/**
 * Consecutive messages with tool results (our `tool_result` role, or user messages made only of
 * results) form one answer turn; providers want them in one message (Anthropic: one user message,
 * results first) or as one tool message per result (OpenAI). This groups them.
 */
export const splitToolResults = (
  content: Message["content"]
): { readonly results: ReadonlyArray<ContentBlock & { readonly type: "tool_result" }>; readonly rest: ReadonlyArray<ContentBlock> } => {
  if (typeof content === "string") return { results: [], rest: content === "" ? [] : [{ type: "text", text: content }] }
  const results: Array<ContentBlock & { readonly type: "tool_result" }> = []
  const rest: Array<ContentBlock> = []
  for (const b of content) {
    if (b.type === "tool_result") results.push(b)
    else rest.push(b)
  }
  return { results, rest }
}
