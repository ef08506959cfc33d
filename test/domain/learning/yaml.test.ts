/**
 * The playbook file format: exact round trip of any rule set, hand-written files with defaults,
 * and every mistake reported with its line.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Result, Schema } from "effect"
import { MATURITIES, INITIAL_CONFIDENCE, type PlaybookRule, cleanTags } from "../../../src/domain/learning/rule.ts"
import { parseIsoTime, parsePlaybook, PLAYBOOK_HEADER, stringifyPlaybook, UNSAFE_TEXT } from "../../../src/domain/learning/yaml.ts"

const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
/** Up to year 9999: what ISO 8601 with four year digits can say. */
const time = int(0, 253_402_300_799_999)
const text = Arbitrary.schema(Schema.String).pipe(
  Arbitrary.map((s) => s.replace(new RegExp(UNSAFE_TEXT, "g"), " ").trim().slice(0, 500).trim() || "x")
)

const ruleArb = Arbitrary.all({
  text,
  confidence: int(0, 10_000),
  maturity: Arbitrary.schema(Schema.Literals(MATURITIES)),
  successCount: int(0, 1_000_000),
  failureCount: int(0, 1_000_000),
  antiPattern: Arbitrary.schema(Schema.Boolean),
  sourceEntries: Arbitrary.array(Arbitrary.schema(Schema.String), { maxLength: 4 }),
  tags: Arbitrary.array(Arbitrary.schema(Schema.String), { maxLength: 6 }),
  createdAt: time,
  applied: Arbitrary.schema(Schema.Boolean),
  lastAppliedAt: time,
  user: Arbitrary.schema(Schema.String)
})

const rulesArb = Arbitrary.array(ruleArb, { maxLength: 8 }).pipe(
  Arbitrary.map((rs) =>
    rs.map((r, i): PlaybookRule => ({
      id: `rule_${i}_${r.createdAt.toString(36)}`,
      text: r.text,
      confidence: r.confidence / 10_000,
      maturity: r.maturity,
      successCount: r.successCount,
      failureCount: r.failureCount,
      antiPattern: r.antiPattern,
      sourceEntries: r.sourceEntries,
      tags: cleanTags(r.tags),
      createdAt: r.createdAt,
      lastAppliedAt: r.applied ? r.lastAppliedAt : null,
      ...(r.user === "" ? {} : { user: r.user })
    }))
  )
)

const ok = (text: string): ReadonlyArray<PlaybookRule> => {
  const r = parsePlaybook(text, "/p.yaml")
  if (Result.isFailure(r)) throw new Error(r.failure.message)
  return r.success
}

/** The error's line and reason for a file that must be refused. */
const bad = (text: string): { readonly line: number; readonly reason: string } => {
  const r = parsePlaybook(text, "/p.yaml")
  if (Result.isSuccess(r)) throw new Error(`accepted: ${JSON.stringify(r.success)}`)
  assert.strictEqual(r.failure.path, "/p.yaml")
  return { line: r.failure.line, reason: r.failure.reason }
}

const minimal = (id: string) => `  - id: ${id}\n    text: Run the tests first\n    created_at: 2026-01-02T03:04:05Z\n`

describe("playbook YAML", () => {
  it.prop("round trip is exact: parse(stringify(rules)) == rules", { rules: rulesArb }, ({ rules }) => {
    const text = stringifyPlaybook(rules)
    assert.deepStrictEqual(ok(text), rules)
    assert.strictEqual(stringifyPlaybook(ok(text)), text, "the same rules give the same bytes")
  }, { arbitrary: { runs: 300 } })

  it("writes a header, snake_case fields in a fixed order, ISO times and flow lists", () => {
    const text = stringifyPlaybook([{
      id: "rule_a", text: "Buffer SSE chunks: until a blank line", confidence: 0.75, maturity: "established", successCount: 5,
      failureCount: 0, antiPattern: false, sourceEntries: ["diary_1"], tags: ["streaming", "sse"], createdAt: Date.UTC(2026, 1, 27, 10, 50),
      lastAppliedAt: null, user: "alice"
    }])
    const header = PLAYBOOK_HEADER.split("\n").map((l) => `#${l}`).join("\n")
    assert.strictEqual(text, `${header}

rules:
  - id: rule_a
    text: "Buffer SSE chunks: until a blank line"
    confidence: 0.75
    maturity: established
    success_count: 5
    failure_count: 0
    anti_pattern: false
    source_entries: [ diary_1 ]
    tags: [ streaming, sse ]
    created_at: 2026-02-27T10:50:00.000Z
    last_applied_at: null
    user: alice
`)
    assert.strictEqual(stringifyPlaybook([]).split("\n").filter((l) => !l.startsWith("#")).join("\n"), "\nrules: []\n")
  })

  it("strings that YAML would read as other types stay strings", () => {
    const tricky: PlaybookRule = {
      id: "r1", text: "true", confidence: 0.5, maturity: "nascent", successCount: 0, failureCount: 0, antiPattern: false,
      sourceEntries: ["1e3", "~", "- x", "[a]"], tags: ["null", "yes", "0.5", "#hash", "a: b"], createdAt: 0, lastAppliedAt: null, user: "123"
    }
    for (const t of ["null", "~", "0x1F", "-.inf", "2026-01-01", "'quoted'", "\"dq\"", "*alias", "&anchor x", "! tag", "%directive", "@at", "`tick`", "key: value", "a # b"]) {
      const r = { ...tricky, text: t, user: t }
      assert.deepStrictEqual(ok(stringifyPlaybook([r])), [r], t)
    }
    assert.deepStrictEqual(ok(stringifyPlaybook([tricky])), [tricky])
  })

  it("an empty file, comments only, `rules:` with nothing and `rules: []` are no rules", () => {
    for (const t of ["", "# nothing yet\n", "rules:\n", "rules: []\n", "~\n", stringifyPlaybook([])]) assert.deepStrictEqual(ok(t), [], t)
  })

  it("a hand-written entry gets the defaults of a new rule", () => {
    assert.deepStrictEqual(ok(`rules:\n${minimal("run-tests")}`), [{
      id: "run-tests", text: "Run the tests first", confidence: INITIAL_CONFIDENCE, maturity: "nascent", successCount: 0, failureCount: 0,
      antiPattern: false, sourceEntries: [], tags: [], createdAt: Date.UTC(2026, 0, 2, 3, 4, 5), lastAppliedAt: null
    }])
    const [r] = ok("rules:\n  - id: a\n    text: >-\n      folded\n      text\n    tags: [Docker, ' docker ', Linux]\n    created_at: 2026-03-01\n    user: null\n    confidence: 0.123456\n")
    assert.deepStrictEqual([r?.text, r?.tags, r?.createdAt, r?.confidence, r !== undefined && "user" in r], ["folded text", ["docker", "linux"], Date.UTC(2026, 2, 1), 0.1235, false])
  })

  it("reads ISO 8601 times: a date, a zone offset, no zone as UTC, and refuses impossible ones", () => {
    assert.strictEqual(parseIsoTime("2026-03-01"), Date.UTC(2026, 2, 1))
    assert.strictEqual(parseIsoTime("2026-03-01T10:00:00+02:00"), Date.UTC(2026, 2, 1, 8))
    assert.strictEqual(parseIsoTime("2026-03-01T10:00:00+0200"), Date.UTC(2026, 2, 1, 8))
    assert.strictEqual(parseIsoTime("2026-03-01 10:00"), Date.UTC(2026, 2, 1, 10))
    assert.strictEqual(parseIsoTime("2026-03-01T10:00:00.123456Z"), Date.UTC(2026, 2, 1, 10, 0, 0, 123))
    for (const t of ["2026-02-30", "2026-13-01", "2026-01-01T24:00", "yesterday", "1700000000000"]) assert.isUndefined(parseIsoTime(t), t)
  })

  it("a typo in a field name is refused with its line", () => {
    const r = bad(`rules:\n${minimal("a")}  - id: b\n    text: Two\n    confidense: 0.9\n    created_at: 2026-01-01\n`)
    assert.strictEqual(r.line, 7)
    assert.include(r.reason, `unknown field "confidense"`)
  })

  it("a YAML syntax error is reported at its line", () => {
    const nested = bad(`rules:\n${minimal("a")}  - id: b\n    text: a: b\n    created_at: 2026-01-01\n`)
    assert.deepStrictEqual([nested.line, nested.reason.startsWith("YAML: ")], [6, true])
    // An unclosed quote is noticed where the file ends.
    assert.strictEqual(bad(`rules:\n${minimal("a")}  - id: b\n    text: "never closed\n`).line, 7)
    const dup = bad(`rules:\n  - id: a\n    text: x\n    text: y\n    created_at: 2026-01-01\n`)
    assert.deepStrictEqual([dup.line, dup.reason.startsWith("YAML: Map keys must be unique")], [4, true])
  })

  it("a bad value is reported at the line of its field", () => {
    const entry = (field: string) => `rules:\n${minimal("a")}  - id: b\n    text: Two\n    created_at: 2026-01-01\n${field}\n`
    const cases: ReadonlyArray<readonly [string, number, string]> = [
      ["    confidence: 1.5", 8, "confidence: Expected a value between 0 and 1"],
      ["    confidence: .nan", 8, "confidence:"],
      ["    maturity: expert", 8, "maturity:"],
      ["    success_count: -1", 8, "success_count: Expected a value greater than or equal to 0"],
      ["    failure_count: 1.5", 8, "failure_count: Expected an integer"],
      ["    anti_pattern: maybe", 8, "anti_pattern: Expected boolean"],
      ["    tags: [a, 3]", 8, "tags.1: Expected string"],
      ["    last_applied_at: last week", 8, "last_applied_at is not an ISO 8601 time"],
      ["    user: ''", 8, "user:"]
    ]
    for (const [field, line, says] of cases) {
      const r = bad(entry(field))
      assert.strictEqual(r.line, line, field)
      assert.include(r.reason, says, field)
    }
  })

  it("a bad id, text or created_at is refused at its line", () => {
    const one = (body: string) => bad(`rules:\n  - id: ok\n${body}`)
    assert.deepStrictEqual(one("    text: x\n    created_at: 2026-13-01\n").line, 4)
    assert.include(bad("rules:\n  - id: Bad Id\n    text: x\n    created_at: 2026-01-01\n").reason, "id:")
    assert.strictEqual(bad("rules:\n  - id: Bad Id\n    text: x\n    created_at: 2026-01-01\n").line, 2)
    assert.include(one("    text: '   '\n    created_at: 2026-01-01\n").reason, "text is empty")
    assert.include(one(`    text: "red \\e[31m"\n    created_at: 2026-01-01\n`).reason, "control characters")
    assert.include(one(`    text: "a \\u202e b"\n    created_at: 2026-01-01\n`).reason, "bidi")
    assert.include(one("    text: |\n      two\n      lines\n    created_at: 2026-01-01\n").reason, "one line")
    assert.include(one(`    text: ${"x".repeat(501)}\n    created_at: 2026-01-01\n`).reason, "longer than 500")
    const missing = one("    text: x\n")
    assert.deepStrictEqual([missing.line, missing.reason.startsWith("created_at:")], [2, true])
  })

  it("repeated ids are refused at the second entry", () => {
    const r = bad(`rules:\n${minimal("a")}${minimal("b")}${minimal("a")}`)
    assert.deepStrictEqual([r.line, r.reason], [8, `rule id "a" is used twice (also at line 2)`])
  })

  it("the top level is a mapping with `rules` only, and `rules` a list of mappings", () => {
    assert.deepStrictEqual(bad(`rule:\n${minimal("a")}`).line, 1)
    assert.include(bad(`# c\nrules: []\nextra: 1\n`).reason, `unknown top-level key "extra"`)
    assert.strictEqual(bad(`# c\nrules: []\nextra: 1\n`).line, 3)
    assert.include(bad("- a\n- b\n").reason, "must be a mapping")
    assert.include(bad("rules: some text\n").reason, "must be a list")
    assert.deepStrictEqual(bad(`rules:\n${minimal("a")}  - just text\n`).line, 5)
  })
})
