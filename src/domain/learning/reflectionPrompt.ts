/**
 * The reflection prompt (issue 15): what the agent's summary model is asked after a burst, and how
 * its answer is read. The model gets the burst as a plain transcript (roles, text, tool calls as
 * `[tool name: short input]`, tool results cut to TOOL_RESULT_CHARS, errors marked) capped to
 * REFLECTION_TRANSCRIPT_TOKENS — the END of the burst is kept, because the outcome (thanks, a
 * complaint, the final answer) is what the entry's status depends on — and must answer with ONLY a
 * JSON object matching `ReflectionAnswer`. Pure.
 */
import { Result, Schema } from "effect"
import { type ContentBlock, estimateTextTokens, type Message } from "../message.ts"
import { MAX_DIARY_ITEM_LENGTH, MAX_DIARY_ITEMS, ReflectionAnswer } from "./diary.ts"
import { cleanTags, MAX_RULE_TEXT } from "./rule.ts"

/** The transcript sent is at most this many tokens (estimateTextTokens); older messages are cut. */
export const REFLECTION_TRANSCRIPT_TOKENS = 12_000
/** A tool result is shown up to this many characters. */
export const TOOL_RESULT_CHARS = 500
/** A tool call's input is shown up to this many characters. */
export const TOOL_INPUT_CHARS = 120
/** At most this many rules are taken from one reflection (short, general, reusable). */
export const MAX_REFLECTION_RULES = 3
/** The answer is a small JSON object; this bounds what a confused model can cost. */
export const REFLECTION_MAX_TOKENS = 1_500

export const REFLECTION_SYSTEM = [
  "You review one burst of work of an AI assistant with a user and write a diary entry about it.",
  "Answer with ONLY a JSON object, no prose and no Markdown fences, with exactly these fields:",
  "- \"accomplishments\": array of short strings, what was done for the user;",
  "- \"decisions\": array of short strings, choices made and why;",
  "- \"challenges\": array of short strings, what went wrong or was hard (tool errors, corrections by the user);",
  "- \"key_learnings\": array of short strings, what to remember for similar work;",
  "- \"tags\": array of 1 to 6 lowercase topic words (e.g. \"docker\", \"python\", \"email\");",
  "- \"status\": \"success\" when the user got what they wanted, \"failure\" when they did not, \"mixed\" otherwise or when unclear;",
  "- \"quality_score\": a number from 0 to 1, how well the assistant did;",
  `- "rules": at most ${MAX_REFLECTION_RULES} playbook rules for future work, each {"text": one short sentence, "tags": [topic words], "anti_pattern": true when it says what NOT to do}.`,
  "Rules must be general and reusable (an instruction that helps with the next similar task), never a fact about this",
  "one conversation, and must contain no personal details of the user (names, addresses, accounts, secrets).",
  "Leave \"rules\" empty when nothing general was learned. Use empty arrays rather than inventing content."
].join("\n")

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters]` : text)

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

const blockLines = (block: ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
      return "[image]"
    case "tool_use":
      return `[tool ${block.name}: ${cut(oneLine(JSON.stringify(block.input) ?? ""), TOOL_INPUT_CHARS)}]`
    case "tool_result": {
      const body = typeof block.content === "string"
        ? block.content
        : block.content.map((b) => (b.type === "text" ? b.text : "[image]")).join("\n")
      return `${block.is_error === true ? "[tool error] " : ""}${cut(body, TOOL_RESULT_CHARS)}`
    }
  }
}

const ROLE_LABEL = { user: "User", assistant: "Assistant", tool_result: "Tool result" } as const

/** One message of the transcript: `Role: text`. */
export const renderMessage = (message: Message): string => {
  const body = typeof message.content === "string" ? message.content : message.content.map(blockLines).join("\n")
  return `${ROLE_LABEL[message.role]}: ${body}`
}

export interface Transcript {
  readonly text: string
  /** Messages left out at the start to fit the budget. */
  readonly cut: number
  /** Whether the last message alone was over the budget (its start was cut). */
  readonly partial: boolean
}

/**
 * The burst as text within `budget` tokens, keeping its end: whole messages from the last one back;
 * a last message alone over the budget keeps its end. Says what was cut.
 */
export const renderTranscript = (messages: ReadonlyArray<Message>, budget: number = REFLECTION_TRANSCRIPT_TOKENS): Transcript => {
  const kept: Array<string> = []
  let tokens = 0
  let partial = false
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message === undefined) continue
    const line = renderMessage(message)
    const t = estimateTextTokens(line) + 1
    if (tokens + t > budget) {
      if (kept.length === 0) {
        // A UTF-16 unit is at most 3 UTF-8 bytes, so `budget` units are at most 0.75 × budget tokens.
        kept.unshift(`[start of this message cut] …${line.slice(-budget)}`)
        partial = true
      }
      break
    }
    kept.unshift(line)
    tokens += t
  }
  const dropped = messages.length - kept.length
  const head = dropped > 0 ? `[${dropped} earlier message${dropped === 1 ? "" : "s"} of this burst cut to fit; the transcript starts mid-burst]\n\n` : ""
  return { text: head + kept.join("\n\n"), cut: dropped, partial }
}

export interface ReflectionPrompt {
  readonly system: string
  readonly user: string
  readonly maxTokens: number
}

export const reflectionPrompt = (messages: ReadonlyArray<Message>, budget: number = REFLECTION_TRANSCRIPT_TOKENS): ReflectionPrompt => ({
  system: REFLECTION_SYSTEM,
  user: `The burst (${messages.length} messages):\n\n${renderTranscript(messages, budget).text}\n\nWrite the diary entry now, as the JSON object only.`,
  maxTokens: REFLECTION_MAX_TOKENS
})

/** The follow-up when an answer does not decode: the error quoted, the format asked for again. */
export const retryMessage = (error: string): string =>
  `Your answer could not be used: ${cut(oneLine(error), 600)}\nAnswer again with ONLY the JSON object described (all fields, the right types), nothing else.`

/** A reflection's answer, cleaned: lists and items capped, tags normalised, rules one line each. */
export interface Reflection {
  readonly accomplishments: ReadonlyArray<string>
  readonly decisions: ReadonlyArray<string>
  readonly challenges: ReadonlyArray<string>
  readonly keyLearnings: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly status: ReflectionAnswer["status"]
  readonly qualityScore: number
  readonly rules: ReadonlyArray<{ readonly text: string; readonly tags: ReadonlyArray<string>; readonly antiPattern: boolean }>
}

const items = (list: ReadonlyArray<string>): ReadonlyArray<string> =>
  list.map((s) => s.trim()).filter((s) => s !== "").slice(0, MAX_DIARY_ITEMS).map((s) => s.slice(0, MAX_DIARY_ITEM_LENGTH))

/**
 * The JSON object of a reply: fences stripped, from the first `{` to the brace that closes it
 * (strings skipped), so prose after the object does not spoil it; an object never closed runs to
 * the last `}`.
 */
export const extractJson = (reply: string): string | undefined => {
  const text = reply.replace(/```(?:json)?/gi, "")
  const start = text.indexOf("{")
  if (start === -1) return undefined
  let depth = 0
  let inString = false
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === "\\") i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === "{") depth++
    else if (c === "}" && --depth === 0) return text.slice(start, i + 1)
  }
  const end = text.lastIndexOf("}")
  return end <= start ? undefined : text.slice(start, end + 1)
}

const decodeAnswer = Schema.decodeUnknownResult(ReflectionAnswer)

/** Reads a reply: the cleaned reflection, or why it cannot be used (quoted back to the model once). */
export const parseReflection = (reply: string): Result.Result<Reflection, string> => {
  const json = extractJson(reply)
  if (json === undefined) return Result.fail("the reply contains no JSON object")
  let raw: unknown
  try {
    raw = JSON.parse(json)
  } catch (e) {
    return Result.fail(`the JSON does not parse: ${e instanceof Error ? e.message : String(e)}`)
  }
  const decoded = decodeAnswer(raw)
  if (Result.isFailure(decoded)) return Result.fail(`the JSON does not match the format: ${decoded.failure.message}`)
  const a = decoded.success
  return Result.succeed({
    accomplishments: items(a.accomplishments),
    decisions: items(a.decisions),
    challenges: items(a.challenges),
    keyLearnings: items(a.key_learnings),
    tags: cleanTags(a.tags),
    status: a.status,
    qualityScore: a.quality_score,
    rules: (a.rules ?? [])
      .map((r) => ({ text: oneLine(r.text).slice(0, MAX_RULE_TEXT), tags: cleanTags(r.tags ?? []), antiPattern: r.anti_pattern === true }))
      .filter((r) => r.text !== "")
      .slice(0, MAX_REFLECTION_RULES)
  })
}
