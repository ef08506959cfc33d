/**
 * The playbook file (issue 15): a top-level `rules:` list whose entries use the design's field names
 * in snake_case, so an operator can read and edit it by hand. Pure: text in, rules out (or the
 * 1-based line of the first mistake), and rules back to deterministic text.
 *
 * A hand-written entry needs `id`, `text` and `created_at`; the rest default as a new rule would
 * start: `confidence` INITIAL_CONFIDENCE (0.5), `maturity` nascent, `success_count` and
 * `failure_count` 0, `anti_pattern` false, `source_entries` and `tags` [], `last_applied_at` null,
 * `user` absent (every user). Times are ISO 8601 (a date alone is midnight UTC; a time without a
 * zone is UTC). Confidence is kept to four decimals, tags are normalised (trimmed, lowercase,
 * repeats dropped), and the text is trimmed, so that what is written reads back exactly.
 */
import { Result, Schema, SchemaIssue } from "effect"
import { Document, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml"
import { round4 } from "./confidence.ts"
import { PlaybookInvalid } from "./errors.ts"
import { cleanTags, INITIAL_CONFIDENCE, MATURITIES, MAX_RULE_TEXT, type PlaybookRule, RULE_ID } from "./rule.ts"

const Count = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/** One entry as written in the file (times still text: their check needs the calendar). */
export const RuleEntry = Schema.Struct({
  id: Schema.String.check(Schema.isPattern(RULE_ID, { message: "an id is 1-64 of a-z, 0-9, '_', '-', starting with a letter or digit" })),
  text: Schema.String,
  confidence: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  maturity: Schema.optionalKey(Schema.Literals(MATURITIES)),
  success_count: Schema.optionalKey(Count),
  failure_count: Schema.optionalKey(Count),
  anti_pattern: Schema.optionalKey(Schema.Boolean),
  source_entries: Schema.optionalKey(Schema.Array(Schema.String)),
  tags: Schema.optionalKey(Schema.Array(Schema.String)),
  created_at: Schema.String,
  last_applied_at: Schema.optionalKey(Schema.NullOr(Schema.String)),
  user: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isNonEmpty())))
})
type RuleEntry = typeof RuleEntry.Type

const FIELDS: ReadonlyArray<string> = Object.keys(RuleEntry.fields)
const decodeEntry = Schema.decodeUnknownResult(RuleEntry)
const issues = SchemaIssue.makeFormatterStandardSchemaV1()

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?)?$/

/** Milliseconds of an ISO 8601 time with real calendar fields (no zone: UTC), or undefined. */
export const parseIsoTime = (text: string): number | undefined => {
  const m = ISO.exec(text.trim())
  if (m === null) return undefined
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined
  if (Number(m[4] ?? 0) > 23 || Number(m[5] ?? 0) > 59 || Number(m[6] ?? 0) > 59) return undefined
  const date = `${m[1]}-${m[2]}-${m[3]}`
  if (m[4] === undefined) return Date.parse(`${date}T00:00:00Z`)
  // Milliseconds are kept (three digits after the dot); finer digits are dropped.
  const frac = m[7] === undefined ? "" : m[7].slice(0, 4).padEnd(4, "0")
  const zone = m[8] === undefined || m[8] === "z" ? "Z" : m[8].length === 5 ? `${m[8].slice(0, 3)}:${m[8].slice(3)}` : m[8]
  const at = Date.parse(`${date}T${m[4]}:${m[5]}:${m[6] ?? "00"}${frac}${zone}`)
  return Number.isNaN(at) ? undefined : at
}

/**
 * Characters a rule's text may not hold: line breaks (it is one line of a prompt), other controls,
 * and bidi overrides, which would make the text read differently on a terminal than in a prompt.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
export const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

/** Why `text` (trimmed) cannot be a rule's text, or undefined. */
export const ruleTextProblem = (text: string): string | undefined => {
  if (text === "") return "the text is empty"
  if (/[\r\n\u2028\u2029]/.test(text)) return "the text must be one line"
  if (UNSAFE_TEXT.test(text)) return "the text may not hold control characters or bidi overrides"
  if (text.length > MAX_RULE_TEXT) return `the text is longer than ${MAX_RULE_TEXT} characters`
  return undefined
}

const asString = (v: unknown): string => (typeof v === "string" ? JSON.stringify(v) : String(v))

/** The node at `path` under `node` (for the line of a mistake), or the deepest one found on the way. */
const nodeAt = (node: Node, path: ReadonlyArray<PropertyKey>): Node => {
  let current = node
  for (const key of path) {
    const next: unknown = isMap(current) || isSeq(current) ? current.get(typeof key === "number" ? key : String(key), true) : undefined
    if (!isMap(next) && !isSeq(next) && !isScalar(next)) return current
    current = next
  }
  return current
}

/** A key as written (a scalar's value), for comparing with field names. */
const keyOf = (key: unknown): unknown => (isScalar(key) ? key.value : key)
const startOf = (node: unknown): number | undefined =>
  node !== null && typeof node === "object" && "range" in node && Array.isArray(node.range) && typeof node.range[0] === "number" ? node.range[0] : undefined

const invalid = (path: string, line: number, reason: string) => Result.fail(new PlaybookInvalid({ path, line, reason }))

/** The rule an entry stands for, or why it cannot be one (and which field is at fault). */
const toRule = (e: RuleEntry): Result.Result<PlaybookRule, { readonly field: string; readonly reason: string }> => {
  const text = e.text.trim()
  const problem = ruleTextProblem(text)
  if (problem !== undefined) return Result.fail({ field: "text", reason: problem })
  const createdAt = parseIsoTime(e.created_at)
  if (createdAt === undefined) return Result.fail({ field: "created_at", reason: `created_at is not an ISO 8601 time: ${asString(e.created_at)}` })
  const applied = e.last_applied_at ?? null
  const lastAppliedAt = applied === null ? null : parseIsoTime(applied)
  if (lastAppliedAt === undefined) return Result.fail({ field: "last_applied_at", reason: `last_applied_at is not an ISO 8601 time: ${asString(applied)}` })
  return Result.succeed({
    id: e.id,
    text,
    confidence: round4(e.confidence ?? INITIAL_CONFIDENCE) + 0,
    maturity: e.maturity ?? "nascent",
    successCount: e.success_count ?? 0,
    failureCount: e.failure_count ?? 0,
    antiPattern: e.anti_pattern ?? false,
    sourceEntries: e.source_entries ?? [],
    tags: cleanTags(e.tags ?? []),
    createdAt,
    lastAppliedAt,
    ...(e.user === undefined || e.user === null ? {} : { user: e.user })
  })
}

/**
 * The rule one entry stands for (a parsed JSON object: a row of PostgreSQL's playbook_rules), checked
 * as an entry of the file is (only known fields, each valid), or why not in one line.
 */
export const ruleOfEntry = (raw: unknown): Result.Result<PlaybookRule, string> => {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return Result.fail("a rule must be a mapping of fields (id, text, created_at, …)")
  const unknown = Object.keys(raw).find((key) => !FIELDS.includes(key))
  if (unknown !== undefined) return Result.fail(`unknown field ${asString(unknown)} (fields: ${FIELDS.join(", ")})`)
  const decoded = decodeEntry(raw)
  if (Result.isFailure(decoded)) {
    const issue = issues(decoded.failure.issue).issues[0]
    const at = (issue?.path ?? []).map((p) => String(typeof p === "object" && p !== null ? p.key : p))
    return Result.fail(`${at.length > 0 ? at.join(".") : "rule"}: ${issue?.message ?? "not a rule"}`)
  }
  const rule = toRule(decoded.success)
  return Result.isFailure(rule) ? Result.fail(rule.failure.reason) : Result.succeed(rule.success)
}

/**
 * The rules of a playbook file's text, or PlaybookInvalid with the 1-based line of the first
 * mistake: a YAML syntax error's line; for a bad entry the line of the field at fault (else where
 * the entry starts); unknown fields (a typo like `confidense`) and repeated ids are refused. An
 * empty file, or one without `rules`, has no rules.
 */
export const parsePlaybook = (text: string, path: string): Result.Result<ReadonlyArray<PlaybookRule>, PlaybookInvalid> => {
  const counter = new LineCounter()
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: false })
  const lineOf = (offset: number | undefined) => (offset === undefined ? 1 : counter.linePos(offset).line)
  const first = doc.errors[0]
  if (first !== undefined) return invalid(path, lineOf(first.pos[0]), `YAML: ${first.message.split("\n")[0] ?? first.code}`)
  const top = doc.contents
  if (top === null || (isScalar(top) && top.value === null)) return Result.succeed([])
  if (!isMap(top)) return invalid(path, lineOf(startOf(top)), "the file must be a mapping with a `rules:` list")
  for (const pair of top.items) {
    const key = keyOf(pair.key)
    if (key !== "rules") return invalid(path, lineOf(startOf(pair.key)), `unknown top-level key ${asString(key)} (only \`rules\`)`)
  }
  const rulesNode: unknown = top.get("rules", true)
  if (rulesNode === undefined || rulesNode === null || (isScalar(rulesNode) && rulesNode.value === null)) return Result.succeed([])
  if (!isSeq(rulesNode)) return invalid(path, lineOf(startOf(rulesNode)), "`rules` must be a list of rules (each entry starting with `- id:`)")
  const rules: Array<PlaybookRule> = []
  const seen = new Map<string, number>()
  for (const node of rulesNode.items) {
    const start = lineOf(startOf(node))
    if (!isMap(node)) return invalid(path, start, "each rule must be a mapping of fields (id, text, created_at, …)")
    for (const pair of node.items) {
      const key = keyOf(pair.key)
      if (typeof key !== "string" || !FIELDS.includes(key)) {
        return invalid(path, lineOf(startOf(pair.key) ?? startOf(node)), `unknown field ${asString(key)} (fields: ${FIELDS.join(", ")})`)
      }
    }
    let raw: unknown
    try {
      raw = node.toJS(doc, { maxAliasCount: 100 })
    } catch (e) {
      return invalid(path, start, `cannot read this rule: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`)
    }
    const decoded = decodeEntry(raw)
    if (Result.isFailure(decoded)) {
      const issue = issues(decoded.failure.issue).issues[0]
      const at = (issue?.path ?? []).map((p) => (typeof p === "object" && p !== null ? p.key : p))
      const field = at.length > 0 ? at.map(String).join(".") : "rule"
      const line = at.length > 0 ? lineOf(startOf(nodeAt(node, at))) : start
      return invalid(path, line, `${field}: ${issue?.message ?? "not a rule"}`)
    }
    const rule = toRule(decoded.success)
    if (Result.isFailure(rule)) return invalid(path, lineOf(startOf(nodeAt(node, [rule.failure.field]))), rule.failure.reason)
    const earlier = seen.get(rule.success.id)
    if (earlier !== undefined) return invalid(path, start, `rule id "${rule.success.id}" is used twice (also at line ${earlier})`)
    seen.set(rule.success.id, start)
    rules.push(rule.success)
  }
  return Result.succeed(rules)
}

/** What the file is, written at its top. */
export const PLAYBOOK_HEADER = [
  " anna playbook: rules learned from experience, injected into the agent's system prompt by their tags.",
  " You may edit it by hand: each rule needs id, text and created_at (ISO 8601); confidence is 0-1;",
  " maturity is nascent, established or proven. anna checks the file on every read and reports a",
  " mistake with its line instead of overwriting it. `anna playbook list` shows what it reads."
].join("\n")

const iso = (ms: number): string => new Date(ms).toISOString()

/** The file's entry for a rule, fields in a fixed order (also a row of PostgreSQL's playbook_rules). */
export const entryOf = (r: PlaybookRule): Record<string, unknown> => ({
  id: r.id,
  text: r.text,
  confidence: round4(r.confidence) + 0,
  maturity: r.maturity,
  success_count: r.successCount,
  failure_count: r.failureCount,
  anti_pattern: r.antiPattern,
  source_entries: [...r.sourceEntries],
  tags: [...r.tags],
  created_at: iso(r.createdAt),
  last_applied_at: r.lastAppliedAt === null ? null : iso(r.lastAppliedAt),
  ...(r.user === undefined ? {} : { user: r.user })
})

/** The file's text for `rules`: deterministic (same rules, same bytes), one blank line between rules. */
export const stringifyPlaybook = (rules: ReadonlyArray<PlaybookRule>): string => {
  const doc = new Document({ rules: rules.map(entryOf) })
  doc.commentBefore = PLAYBOOK_HEADER
  const seq = doc.get("rules", true)
  if (isSeq(seq)) {
    seq.items.forEach((item, i) => {
      if (!isMap(item)) return
      if (i > 0) item.spaceBefore = true
      for (const key of ["source_entries", "tags"]) {
        const list = item.get(key, true)
        if (isSeq(list)) list.flow = true
      }
    })
  }
  return doc.toString({ lineWidth: 0 })
}
