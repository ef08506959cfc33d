/**
 * The diary entry written when no model answers (issue 15): what can be read off a burst's messages
 * without understanding them — tool calls that failed, the user correcting or complaining, the user
 * thanking or praising. Pure.
 *
 * Only user messages that follow an assistant message are read for corrections and praise: "it
 * doesn't work" in the first request describes the user's problem, and "thanks in advance" judges
 * nothing yet. Phrases match case-insensitively on word boundaries (CJK phrases as substrings, since
 * those scripts have no spaces), and a praise word right after a negation ("not great") is not praise.
 */
import type { ContentBlock, Message, ToolResultBlock } from "../message.ts"
import { type DiaryEntry, type DiaryStatus, MAX_DIARY_ITEM_LENGTH, MAX_DIARY_ITEMS } from "./diary.ts"
import { cleanTags } from "./rule.ts"

/** The fields of a diary entry that come from reading the burst (not its identity or time). */
export type HeuristicFields = Pick<
  DiaryEntry,
  "accomplishments" | "decisions" | "challenges" | "keyLearnings" | "tags" | "status" | "qualityScore"
>

/**
 * Quality score = clamp(BASE + ANSWERED (if the assistant wrote any text) + PRAISE × praising messages
 * (at most MAX_COUNTED) − COMPLAINT × complaining messages (at most MAX_COUNTED) − TOOL_ERROR × failed
 * tool calls (at most MAX_COUNTED)) to [0, 1], rounded to two decimals. A complaint weighs more than
 * praise, as a failure does for playbook rules: one "still broken" says more than a polite "thanks".
 */
export const QUALITY_BASE = 0.5
export const QUALITY_ANSWERED = 0.1
export const QUALITY_PRAISE = 0.15
export const QUALITY_COMPLAINT = 0.2
export const QUALITY_TOOL_ERROR = 0.05
/** Signals of one kind beyond this many do not move the score further. */
export const QUALITY_MAX_COUNTED = 3

/** Accomplishments: the first line of at most this many user messages, each cut to this length. */
export const MAX_ASKED = 3
export const MAX_ASKED_LENGTH = 200
/** At most this many of the user's frequent words become tags (after the tools used). */
export const MAX_WORD_TAGS = 3

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

/** A phrase list as one regex: word boundaries for alphabetic phrases, plain substrings for CJK ones. */
const phrases = (list: ReadonlyArray<string>, negatable: boolean): RegExp => {
  const literal = (p: string) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/ /g, "\\s+")
  const negation = negatable ? "(?<!(?:not|no|never|nicht|pas|nada)\\s+)" : ""
  // "ça marche pas", "klappt nicht": the negation follows the verb in French and German.
  const negatedAfter = negatable ? "(?!\\s+(?:pas|nicht)(?![\\p{L}\\p{N}]))" : ""
  const parts = list.map((p) =>
    CJK.test(p) ? literal(p) : `${negation}(?<![\\p{L}\\p{N}])${literal(p)}(?![\\p{L}\\p{N}])${negatedAfter}`
  )
  return new RegExp(parts.join("|"), "iu")
}

/** The user says the answer was wrong or did not help. */
const COMPLAINTS = phrases([
  // English
  "that's wrong", "that is wrong", "this is wrong", "wrong answer", "that's not right", "that is not right", "not what i asked",
  "not what i wanted", "not what i meant", "doesn't work", "does not work", "didn't work", "did not work", "still broken",
  "still fails", "still failing", "still not working", "still doesn't", "still wrong", "you forgot", "you missed", "you ignored",
  "incorrect", "that's not it", "not working", "try again", "useless",
  // German
  "das ist falsch", "stimmt nicht", "funktioniert nicht", "klappt nicht", "geht nicht", "immer noch nicht", "immer noch kaputt", "du hast vergessen",
  // French
  "c'est faux", "marche pas", "fonctionne pas", "toujours cassé", "pas ce que j'ai demandé", "tu as oublié",
  // Spanish
  "está mal", "no funciona", "sigue roto", "sigue sin funcionar", "incorrecto", "no es lo que pedí", "olvidaste",
  // Chinese
  "不对", "错了", "不行", "还是不行", "没用", "不是我要的"
], false)
/** "No, …" at the very start of a reply is a correction; "no" elsewhere is just a word. */
const LEADING_NO = /^\s*(?:no|nope|nein|non)\s*[,.!;:]/iu

/** The user thanks or praises. */
const PRAISE = phrases([
  // English
  "thanks", "thank you", "thx", "great", "perfect", "awesome", "excellent", "brilliant", "works now", "that works",
  "it works", "well done", "nice", "exactly", "good job", "solved",
  // German
  "danke", "super", "perfekt", "klappt", "funktioniert jetzt", "genau",
  // French
  "merci", "parfait", "génial", "ça marche", "ca marche", "excellent",
  // Spanish
  "gracias", "perfecto", "genial", "ya funciona", "excelente",
  // Chinese
  "谢谢", "多谢", "太好了", "完美", "可以了"
], true)

/** Words too common to describe what a burst was about. */
const STOP_WORDS: ReadonlySet<string> = new Set(
  ("the and for are but not you your with this that have has had was were will would could should can cannot please " +
    "thanks thank what when where which who why how all any some our out from into onto about there their them they " +
    "then than just also like want need make does did done doing its it's i'm i've don't doesn't didn't isn't can't " +
    "now get got let use using used one two yes okay great perfect still again more most very much here help " +
    "that's there's what's let's you're we're they're i'll you'll won't wasn't aren't haven't shouldn't " +
    "wrong work works working right know think see look give tell show me my mine his her him she he we us").split(" ")
)

const textOf = (content: Message["content"]): string =>
  typeof content === "string"
    ? content
    : content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n")

const firstLine = (text: string): string => text.trim().split(/\r?\n/, 1)[0]?.trim() ?? ""

const cut = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`)

const resultText = (b: ToolResultBlock): string =>
  typeof b.content === "string" ? b.content : b.content.map((c) => (c.type === "text" ? c.text : "[image]")).join("\n")

const blocks = (m: Message): ReadonlyArray<ContentBlock> => (typeof m.content === "string" ? [] : m.content)

interface Signals {
  readonly asked: ReadonlyArray<string>
  readonly praise: number
  readonly complaints: ReadonlyArray<string>
  readonly toolErrors: ReadonlyArray<string>
  readonly tools: ReadonlyArray<string>
  readonly answered: boolean
  readonly userText: string
}

const readSignals = (messages: ReadonlyArray<Message>): Signals => {
  const toolNames = new Map<string, string>()
  const tools: Array<string> = []
  const asked: Array<string> = []
  const complaints: Array<string> = []
  const toolErrors: Array<string> = []
  const userTexts: Array<string> = []
  let praise = 0
  let answered = false
  let assistantSpoke = false
  for (const m of messages) {
    for (const b of blocks(m)) {
      if (b.type === "tool_use") {
        toolNames.set(b.id, b.name)
        if (!tools.includes(b.name)) tools.push(b.name)
      } else if (b.type === "tool_result" && b.is_error === true) {
        const name = toolNames.get(b.tool_use_id) ?? "(unknown)"
        toolErrors.push(`tool ${name} failed: ${firstLine(resultText(b)) || "(no message)"}`)
      }
    }
    if (m.role === "assistant") {
      assistantSpoke = true
      if (textOf(m.content).trim() !== "") answered = true
      continue
    }
    if (m.role !== "user") continue
    const text = textOf(m.content)
    if (text.trim() === "") continue
    userTexts.push(text)
    if (asked.length < MAX_ASKED) asked.push(`asked: ${cut(firstLine(text), MAX_ASKED_LENGTH)}`)
    if (!assistantSpoke) continue
    const flat = text.replace(/[\u2018\u2019\u02bc]/g, "'")
    if (COMPLAINTS.test(flat) || LEADING_NO.test(flat)) complaints.push(`user objected: ${firstLine(flat)}`)
    if (PRAISE.test(flat)) praise++
  }
  return { asked, praise, complaints, toolErrors, tools, answered, userText: userTexts.join("\n") }
}

/**
 * Praise without complaint is success (tool errors the agent got past do not spoil it), complaint
 * without praise failure, both mixed; without either, tool errors make it mixed, and otherwise it
 * is success when the assistant answered at all.
 */
export const heuristicStatus = (s: { praise: number; complaints: number; toolErrors: number; answered: boolean }): DiaryStatus => {
  if (s.praise > 0) return s.complaints > 0 ? "mixed" : "success"
  if (s.complaints > 0) return "failure"
  if (s.toolErrors > 0) return "mixed"
  return s.answered ? "success" : "mixed"
}

export const heuristicQuality = (s: { praise: number; complaints: number; toolErrors: number; answered: boolean }): number => {
  const counted = (n: number) => Math.min(n, QUALITY_MAX_COUNTED)
  const raw = QUALITY_BASE + (s.answered ? QUALITY_ANSWERED : 0) + QUALITY_PRAISE * counted(s.praise) -
    QUALITY_COMPLAINT * counted(s.complaints) - QUALITY_TOOL_ERROR * counted(s.toolErrors)
  return Math.round(Math.min(1, Math.max(0, raw)) * 100) / 100
}

/** Up to MAX_WORD_TAGS of the most frequent meaningful words (ties: the first said first). */
export const frequentWords = (text: string): ReadonlyArray<string> => {
  const counts = new Map<string, number>()
  for (const w of text.toLowerCase().split(/[^\p{L}\p{N}_+#'-]+/u)) {
    const word = w.replace(/^['-]+|['-]+$/g, "")
    if (word.length < 3 || word.length > 24 || /^\p{N}+$/u.test(word) || STOP_WORDS.has(word) || CJK.test(word)) continue
    counts.set(word, (counts.get(word) ?? 0) + 1)
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, MAX_WORD_TAGS).map(([w]) => w)
}

/** At most MAX_DIARY_ITEMS distinct items, each at most MAX_DIARY_ITEM_LENGTH characters. */
const items = (list: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(list.map((i) => cut(i, MAX_DIARY_ITEM_LENGTH)))].slice(0, MAX_DIARY_ITEMS)

export const heuristicEntry = (messages: ReadonlyArray<Message>): HeuristicFields => {
  const s = readSignals(messages)
  const counts = { praise: s.praise, complaints: s.complaints.length, toolErrors: s.toolErrors.length, answered: s.answered }
  return {
    accomplishments: items(s.asked),
    // A heuristic sees what happened, not why: decisions and learnings are the model's to name.
    decisions: [],
    challenges: items([...s.toolErrors, ...s.complaints]),
    keyLearnings: [],
    tags: cleanTags([...s.tools, ...frequentWords(s.userText)]).slice(0, MAX_DIARY_ITEMS),
    status: heuristicStatus(counts),
    qualityScore: heuristicQuality(counts)
  }
}
