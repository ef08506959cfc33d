/**
 * Writes of the YAML playbook: a failure (a crash) at any step of a write leaves the old file
 * byte-identical and no temp file in its place; concurrent writers in one process lose nothing;
 * another process replacing the file between our read and our rename makes us redo the update on
 * its file instead of overwriting it; users' votes counted by a write that failed are taken back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Exit, Layer, ManagedRuntime, Schema } from "effect"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { PlaybookError, RuleNotFound, RuleRejected } from "../../../src/domain/learning/errors.ts"
import type { StorageError } from "../../../src/domain/storage/errors.ts"
import { cleanTags, MATURITIES, type PlaybookRule } from "../../../src/domain/learning/rule.ts"
import { parsePlaybook, stringifyPlaybook, UNSAFE_TEXT } from "../../../src/domain/learning/yaml.ts"
import * as SqliteRuleVotes from "../../../src/layers/learning/SqliteRuleVotes.ts"
import * as YamlPlaybook from "../../../src/layers/learning/YamlPlaybook.ts"
import type { WriteHooks } from "../../../src/layers/learning/playbookFile.ts"
import type { Playbook } from "../../../src/services/Playbook.ts"
import { sqliteTemp } from "../../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const newHome = () => {
  const h = mkdtempSync(join(tmpdir(), "anna-playbook-w-"))
  homes.push(h)
  return h
}

/** Users' votes on shared rules (RuleVotes), on one SQLite file for the whole file's tests (these give the operator's feedback). */
const votes = ManagedRuntime.make(SqliteRuleVotes.layer.pipe(Layer.provide(sqliteTemp)))
afterAll(() => votes.dispose())
/** The playbook on `home`. */
const make = (options: YamlPlaybook.Options) => Effect.flatMap(votes.contextEffect, (context) => YamlPlaybook.make(options).pipe(Effect.provide(context)))

const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const rulesArb = Arbitrary.array(
  Arbitrary.all({
    text: Arbitrary.schema(Schema.String).pipe(Arbitrary.map((s) => s.replace(new RegExp(UNSAFE_TEXT, "g"), " ").trim().slice(0, 200).trim() || "x")),
    confidence: int(0, 10_000),
    maturity: Arbitrary.schema(Schema.Literals(MATURITIES)),
    failures: int(0, 20),
    tags: Arbitrary.array(Arbitrary.schema(Schema.String), { maxLength: 4 }),
    createdAt: int(0, 4_102_444_800_000),
    user: Arbitrary.schema(Schema.String)
  }),
  { maxLength: 12 }
).pipe(
  Arbitrary.map((rs) =>
    rs.map((r, i): PlaybookRule => ({
      id: `r${i}`, text: r.text, confidence: r.confidence / 10_000, maturity: r.maturity, successCount: 0, failureCount: r.failures,
      antiPattern: false, sourceEntries: [], tags: cleanTags(r.tags), createdAt: r.createdAt, lastAppliedAt: null,
      ...(r.user === "" ? {} : { user: r.user })
    }))
  )
)

const crash = () => Promise.reject(new Error("simulated crash"))
const STEPS: ReadonlyArray<readonly [string, WriteHooks]> = [
  ["after the temp file is written", { afterTempWrite: crash }],
  ["just before the rename", { beforeRename: crash }]
]

/** Every write the service can do, on a file holding `rules` (ids r0, r1, …). */
const writes = (rules: ReadonlyArray<PlaybookRule>): ReadonlyArray<(pb: Playbook["Service"]) => Effect.Effect<void, PlaybookError | RuleNotFound | RuleRejected | StorageError>> => {
  const id = rules[0]?.id ?? "r0"
  return [
    (pb: Playbook["Service"]) => Effect.asVoid(pb.propose({ agentId: undefined, user: undefined, text: "A brand new rule nobody wrote", tags: ["x"], sourceEntries: [], antiPattern: false })),
    (pb: Playbook["Service"]) => Effect.asVoid(pb.feedback(undefined, [id], "failure", "operator")),
    (pb: Playbook["Service"]) => Effect.asVoid(pb.remove(undefined, id))
  ]
}

const failureTag = <A, E>(exit: Exit.Exit<A, E>): string | undefined =>
  Exit.isFailure(exit) ? (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: { _tag: string } } | undefined)?.error._tag : undefined

describe("YamlPlaybook writes", () => {
  for (const [step, hooks] of STEPS) {
    it.effect(`a crash ${step} leaves the old file byte-identical and no temp file behind`, () =>
      Effect.gen(function*() {
        const home = newHome()
        const path = join(home, "playbook.yaml")
        const old = `# my own comment\nrules:\n  - id: r0\n    text: Hand-written\n    created_at: 2026-01-01\n`
        writeFileSync(path, old)
        const broken = yield* make({ home, hooks })
        for (const w of writes([])) {
          assert.strictEqual(failureTag(yield* Effect.exit(w(broken))), "PlaybookWriteFailed")
          assert.strictEqual(readFileSync(path, "utf8"), old)
          assert.deepStrictEqual(readdirSync(home), ["playbook.yaml"], "the temp file is gone")
        }
        const fine = yield* make({ home })
        yield* fine.feedback(undefined, ["r0"], "success", "operator")
        assert.strictEqual((yield* fine.get(undefined, "r0")).rule.successCount, 1, "the next write works")
      }))
  }

  it.effect.prop("for random rule sets, a failed write at any step leaves the file as it was", { rules: rulesArb, step: int(0, STEPS.length - 1), which: int(0, 2) }, ({ rules, step, which }) =>
    Effect.gen(function*() {
      const home = newHome()
      const path = join(home, "playbook.yaml")
      const old = stringifyPlaybook(rules)
      writeFileSync(path, old)
      const pb = yield* make({ home, hooks: STEPS[step]?.[1] ?? {} })
      const write = writes(rules)[which]
      if (write === undefined) return false
      const exit = yield* Effect.exit(write(pb))
      // Feedback or removal of a rule a random set does not have writes nothing at all.
      const tag = failureTag(exit)
      assert.isTrue(tag === "PlaybookWriteFailed" || tag === "RuleNotFound" || (Exit.isSuccess(exit) && rules.length === 0), String(tag))
      assert.strictEqual(readFileSync(path, "utf8"), old)
      const back = parsePlaybook(readFileSync(path, "utf8"), path)
      assert.deepStrictEqual(back._tag === "Success" ? back.success : undefined, rules)
      assert.deepStrictEqual(readdirSync(home), ["playbook.yaml"])
      rmSync(home, { recursive: true, force: true })
      return true
    }), { arbitrary: { runs: 40 } })

  it.effect("a temp file left by a real crash is not read as the playbook", () =>
    Effect.gen(function*() {
      const home = newHome()
      writeFileSync(join(home, ".playbook.yaml.123.abcdef.tmp"), "rules:\n  - id: half\n    te")
      const pb = yield* make({ home })
      assert.deepStrictEqual(yield* pb.list(undefined), [])
      yield* pb.propose({ agentId: undefined, user: undefined, text: "Works", tags: [], sourceEntries: [], antiPattern: false })
      assert.strictEqual((yield* pb.list(undefined)).length, 1)
    }))

  it.effect("concurrent proposals in one process all land (one writer per file at a time)", () =>
    Effect.gen(function*() {
      const home = newHome()
      const pb = yield* make({ home })
      const texts = Array.from({ length: 12 }, (_, i) => `Distinct rule number ${i} about topic ${"abcdefghijkl"[i]}`)
      yield* Effect.forEach(texts, (text) => pb.propose({ agentId: "a1", user: undefined, text, tags: [], sourceEntries: [], antiPattern: false }), { concurrency: "unbounded" })
      assert.deepStrictEqual((yield* pb.list("a1")).map((s) => s.rule.text).sort(), [...texts].sort())
    }))

  it.effect("a failed write of a consensus takes the counting back: the users' votes stay pending and count once the file can be written", () =>
    Effect.gen(function*() {
      const home = newHome()
      const fine = yield* make({ home })
      const broken = yield* make({ home, hooks: { beforeRename: crash } })
      const { rule } = yield* fine.propose({ agentId: undefined, user: undefined, text: "A rule for everyone", tags: ["x"], sourceEntries: [], antiPattern: false })
      for (const user of ["u1", "u2"]) assert.strictEqual((yield* broken.feedback(undefined, [rule.id], "failure", { user }))[0]?.effect, "noted")
      assert.strictEqual(failureTag(yield* Effect.exit(broken.feedback(undefined, [rule.id], "failure", { user: "u3" }))), "PlaybookWriteFailed")
      assert.deepStrictEqual(yield* fine.votes(undefined, rule.id), { success: 0, failure: 3, counted: 0 }, "nothing counted without effect")
      assert.strictEqual((yield* fine.get(undefined, rule.id)).rule.failureCount, 0)
      const [done] = yield* fine.feedback(undefined, [rule.id], "failure", { user: "u3" })
      assert.strictEqual(done?.effect, "applied")
      assert.deepStrictEqual(yield* fine.votes(undefined, rule.id), { success: 0, failure: 3, counted: 3 })
      assert.strictEqual((yield* fine.get(undefined, rule.id)).rule.failureCount, 3)
    }))

  it.effect("a file replaced by another process during our write is not overwritten: the update is redone on it", () =>
    Effect.gen(function*() {
      const home = newHome()
      const path = join(home, "playbook.yaml")
      writeFileSync(path, "rules:\n  - id: mine\n    text: Mine\n    created_at: 2026-01-01\n")
      let interfered = false
      const other = "rules:\n  - id: mine\n    text: Mine\n    created_at: 2026-01-01\n  - id: theirs\n    text: Theirs, added meanwhile\n    created_at: 2026-01-02\n"
      const pb = yield* make({
        home,
        hooks: {
          afterTempWrite: async () => {
            if (interfered) return
            interfered = true
            writeFileSync(join(home, "other.tmp"), other)
            const { renameSync } = await import("node:fs")
            renameSync(join(home, "other.tmp"), path)
          }
        }
      })
      yield* pb.feedback(undefined, ["mine"], "success", "operator")
      const rules = yield* pb.list(undefined)
      assert.deepStrictEqual(rules.map((s) => [s.rule.id, s.rule.successCount]), [["mine", 1], ["theirs", 0]])
    }))
})
