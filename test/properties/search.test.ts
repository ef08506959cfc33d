/**
 * Search over random sessions of two users who share distinctive words (Latin, Chinese, Japanese,
 * Korean), partly compacted so summaries are searched too.
 *
 * Isolation: a search in user A's scope (or in one session's scope) returns only A's (that
 * session's) messages and summaries — checked against the row ids each session holds, not against
 * what the hit says about itself — while the shared words are found in both users' scopes.
 *
 * Robustness: arbitrary strings (any UTF-16, lone surrogates and control characters included) and
 * soups of query syntax (unbalanced quotes, NOT/OR/NEAR, key:value, *, -, %, _, emoji, CJK) as
 * queries, with arbitrary limits, never produce an error: results or an empty list, within scope
 * and limit. Describe/expand of arbitrary ids fail only with SummaryNotFound.
 *
 * Scope (issue 11): no query, whatever its text (words of the stored sessions, syntax, column
 * filters, CJK, emoji, arbitrary strings), in either mode and with neighbours asked for, returns a
 * hit outside its scope: every hit of a Session scope is a row of that session and every hit of a
 * User scope a row of that user's sessions, the neighbours of a message hit are messages of its
 * session next to it, and a summary hit covers messages of its session. Ranked search matches rows
 * with their neighbouring turns (issue 25) and is checked with and without; strict search gives the
 * same hits either way.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Arbitrary, Effect, Layer, Result, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { SearchScope } from "../../src/domain/memory/types.ts"
import type { NewMessage } from "../../src/domain/message.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { Explorer } from "../../src/services/Explorer.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../src/services/MemoryStore.ts"
import { Searcher } from "../../src/services/Searcher.ts"
import { lcmOn as lcmOnLayer, sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { lcmOn } from "./support/layers.ts"
import { buildSession, int, rng, type SessionSpec, sessionSpec } from "./support/sessions.ts"

/** Words both users use; each is findable by the porter or the trigram index. */
const SHARED = ["zebraquartz", "记忆系统", "東京タワー", "메모리검색", "xylophonic"]
/** User id pairs that a sloppy scope (LIKE, prefix, case folding, trimming) would confuse. */
const USER_PAIRS: ReadonlyArray<readonly [string, string]> = [
  ["A", "B"],
  ["alice", "alice2"],
  ["Bob", "bob"],
  ["u%", "u_"],
  ["x", "x "],
  ["用户", "用户2"],
  ["a'b", "a\"b"]
]

const sharedMessages = (label: string, n: number, seed: number): Array<NewMessage> => {
  const r = rng(seed)
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `${label} says ${SHARED.filter(() => r.chance(0.6)).join(" ")} ${SHARED[i % SHARED.length]}.`,
    createdAt: 1_600_000_000_000 + i
  }))
}

const sessionMessages = (spec: SessionSpec, label: string): Array<NewMessage> => [
  ...sharedMessages(label, 6, spec.seed),
  ...buildSession(spec, label),
  ...sharedMessages(label, 3, spec.seed + 1)
]

interface Owned {
  readonly keys: ReadonlySet<string>
  readonly messages: ReadonlySet<number>
  readonly summaries: ReadonlySet<number>
}

/** Row ids of the given sessions, read from the store. */
const ownedBy = (keys: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const messages = new Set<number>()
    const summaries = new Set<number>()
    for (const key of keys) {
      const c = yield* store.getConversation(key)
      const input = yield* store.verifyInput(c.id, key)
      for (const m of input.messages) messages.add(m.id)
      for (const s of input.summaries) summaries.add(s.id)
    }
    const owned: Owned = { keys: new Set(keys), messages, summaries }
    return owned
  })

type Hit = { readonly id: string; readonly sessionKey: string; readonly kind: string }

const assertWithin = (hits: ReadonlyArray<Hit>, owned: Owned, what: string) => {
  for (const h of hits) {
    const m = /^(msg|sum)_(\d+)$/.exec(h.id)
    assert.isNotNull(m, `${what}: hit id ${h.id}`)
    const id = Number(m?.[2])
    const mine = h.kind === "message" ? owned.messages.has(id) : owned.summaries.has(id)
    assert.isTrue(mine, `${what}: hit ${h.id} (${h.kind}) is not a row of the scope`)
    assert.isTrue(owned.keys.has(h.sessionKey), `${what}: hit from session ${h.sessionKey}`)
  }
}

const isolationCase = Arbitrary.all({
  a: sessionSpec,
  b: sessionSpec,
  users: Arbitrary.schema(int(0, USER_PAIRS.length - 1)),
  compactA: Arbitrary.schema(Schema.Boolean),
  compactB: Arbitrary.schema(Schema.Boolean),
  seed: Arbitrary.schema(int(0, 1_000_000))
})

for (const db of testDatabases(sqliteTemp)) {
describe(`memory properties: search isolation (${db.name})`, () => {
  it.live.prop(
    "a user's scope never returns another user's rows; a session's scope only that session's",
    { c: isolationCase },
    ({ c }) =>
      Effect.scoped(Effect.gen(function*() {
        const file = (yield* db.open).layer
        const [userA, userB] = USER_PAIRS[c.users] ?? ["A", "B"]
        const keysA = [`agent:test:${userA}:one`]
        const keysB = [`agent:test:${userB}:one`, `agent:test:${userB}:two`]
        yield* Effect.gen(function*() {
          const memory = yield* MemoryProvider
          const compactor = yield* Compactor
          const searcher = yield* Searcher
          const sessions: Array<readonly [string, string, SessionSpec, boolean]> = [
            [keysA[0] ?? "", userA, c.a, c.compactA],
            [keysB[0] ?? "", userB, c.b, c.compactB],
            [keysB[1] ?? "", userB, { ...c.a, seed: c.a.seed + 1, length: c.a.length % 60 }, !c.compactB]
          ]
          for (const [key, userId, spec, compact] of sessions) {
            yield* memory.append(sessionRefFromKey(key, { userId }), sessionMessages(spec, key))
            if (compact) yield* compactor.compact(key, { full: true, freshTail: 4 })
          }
          const ownedA = yield* ownedBy(keysA)
          const ownedB = yield* ownedBy(keysB)
          const r = rng(c.seed)
          const queries = [
            ...SHARED,
            ...Array.from({ length: 8 }, () => {
              const vocabulary = [...SHARED, "says", "OR", "\"", "*", "docker", "记忆"]
              const parts = Array.from({ length: r.int(1, 3) }, () => r.pick(vocabulary))
              return parts.join(r.chance(0.5) ? " " : " OR ")
            })
          ]
          for (const q of queries) {
            const limit = r.int(1, 100)
            const byA = yield* searcher.search(q, { scope: { _tag: "User", userId: userA }, limit })
            const byB = yield* searcher.search(q, { scope: { _tag: "User", userId: userB }, limit })
            assertWithin(byA, ownedA, `user ${JSON.stringify(userA)} searching ${JSON.stringify(q)}`)
            assertWithin(byB, ownedB, `user ${JSON.stringify(userB)} searching ${JSON.stringify(q)}`)
            for (const key of [...keysA, ...keysB]) {
              const hits = yield* searcher.search(q, { scope: { _tag: "Session", sessionKey: key }, limit })
              assertWithin(hits, yield* ownedBy([key]), `session ${key} searching ${JSON.stringify(q)}`)
            }
            if (SHARED.includes(q)) {
              assert.isAbove(byA.length, 0, `user ${JSON.stringify(userA)} does not find their own ${q}`)
              assert.isAbove(byB.length, 0, `user ${JSON.stringify(userB)} does not find their own ${q}`)
            }
          }
        }).pipe(Effect.provide(lcmOn(file), { local: true }))
      })),
    { timeout: 170_000, arbitrary: { runs: 15, maxShrinks: 20 } }
  )
})
}

// ---------------------------------------------------------------------------------------------
// Robustness over one populated database

const TOKENS = [
  "\"", "\"\"", "'", "NOT", "not", "OR", "AND", "NEAR", "NEAR(a b)", "key:value", "text:foo", "*", "a*", "*a", "-",
  "-foo", "+", "%", "_", "^", "(", ")", "{", "}", "[", "]", ":", "\\", "/", "😀", "👍🏽", "记忆", "记忆系统", "記", "東京タワー",
  "메모리", "\u0000", "\u0001", "\n", "\t", "\ud800", "\udfff", "zebraquartz", "docker", "a", "ab", "abc", "select",
  "DROP TABLE ctx_messages", ";", "--", "/*", "*/", "||", "|", "&", "=", "<", ">", "é", "e\u0301", "ﬁ", "İ", "ß", "\u200b",
  "rank", "bm25(", "MATCH", "x'", "0x00", "1e309", "NaN"
] as const

const soup = Arbitrary.array(Arbitrary.schema(Schema.Literals(TOKENS)), { maxLength: 8 }).pipe(
  Arbitrary.map((parts) => parts.join(parts.length % 3 === 0 ? "" : " "))
)

const populated = (database: Layer.Layer<SqlClient.SqlClient, unknown>) => Layer.effectDiscard(Effect.gen(function*() {
  const memory = yield* MemoryProvider
  const compactor = yield* Compactor
  const specs: Array<readonly [string, string, SessionSpec]> = [
    ["agent:test:A:one", "A", { seed: 11, length: 250, large: 1, tools: 5, cjk: 5, weird: 6, huge: 0 }],
    ["agent:test:B:one", "B", { seed: 12, length: 200, large: 1, tools: 3, cjk: 8, weird: 2, huge: 0 }],
    ["agent:test:B:two", "B", { seed: 13, length: 80, large: 1, tools: 8, cjk: 0, weird: 10, huge: 0 }]
  ]
  for (const [key, userId, spec] of specs) {
    yield* memory.append(sessionRefFromKey(key, { userId }), sessionMessages(spec, key))
    yield* compactor.compact(key, { full: true, freshTail: 6 })
  }
})).pipe(Layer.provideMerge(lcmOnLayer(database)))

for (const db of testDatabases(sqliteTemp)) {
layer(populated(db.layer), { timeout: "60 seconds", excludeTestServices: true })(`memory properties: search robustness (${db.name})`, (it) => {
  it.effect.prop(
    "any query string gives results or an empty list, within scope and limit, never an error",
    { raw: Arbitrary.schema(Schema.String), syntax: soup, limit: Arbitrary.schema(int(-5, 300)) },
    ({ raw, syntax, limit }) =>
      Effect.gen(function*() {
        const searcher = yield* Searcher
        const explorer = yield* Explorer
        const scopes: ReadonlyArray<readonly [SearchScope, ReadonlyArray<string>]> = [
          [{ _tag: "User", userId: "A" }, ["agent:test:A:one"]],
          [{ _tag: "User", userId: "B" }, ["agent:test:B:one", "agent:test:B:two"]],
          [{ _tag: "User", userId: "nobody" }, []],
          [{ _tag: "Session", sessionKey: "agent:test:B:two" }, ["agent:test:B:two"]],
          [{ _tag: "All" }, ["agent:test:A:one", "agent:test:B:one", "agent:test:B:two"]]
        ]
        for (const q of [raw, syntax, `${syntax} ${raw}`, `"${raw}`]) {
          for (const [scope, keys] of scopes) {
            const result = yield* Effect.result(searcher.search(q, { scope, limit }))
            if (Result.isFailure(result)) {
              assert.fail(`search ${JSON.stringify(q)} in ${JSON.stringify(scope)} failed: ${result.failure.message}`)
              continue
            }
            const hits = result.success
            assert.isAtMost(hits.length, Math.min(100, Math.max(1, limit)), "more hits than the limit")
            for (const h of hits) assert.isTrue(Number.isFinite(h.score), `hit ${h.id}: score ${h.score}`)
            assertWithin(hits, yield* ownedBy(keys), `search ${JSON.stringify(q)} in ${JSON.stringify(scope)}`)
          }
          for (const id of [q, `sum_${q}`]) {
            const d = yield* Effect.result(explorer.describe(id, { _tag: "User", userId: "A" }))
            if (Result.isFailure(d)) assert.strictEqual(d.failure._tag, "SummaryNotFound", `describe ${JSON.stringify(id)}`)
            const e = yield* Effect.result(explorer.expand(id, { scope: { _tag: "User", userId: "A" } }))
            if (Result.isFailure(e)) assert.strictEqual(e.failure._tag, "SummaryNotFound", `expand ${JSON.stringify(id)}`)
          }
        }
      }),
    { timeout: 120_000, arbitrary: { runs: 150, maxShrinks: 40 } }
  )
})
}

// ---------------------------------------------------------------------------------------------
// Scope, in both modes, for any query

/** Query pieces: stored words (so queries do find things), syntax, filters, CJK, emoji. */
const PIECES = [
  ...SHARED, "says", "docker", "memory", "summary", "tokyo", "记忆", "数据库", "東京", "메모리", "会議", "FACT-1",
  "OR", "AND", "NOT", "|", "\"", "*", "deplo*", "(", ")", ":", "-", "%", "_", "😀", "👍🏽", "\u0000", "\ud800",
  "role:user", "role:assistant", "role:tool_result", "role:bogus", "tool:bash", "tool:read", "tool:", "kind:summary",
  "kind:message", "scope:c1", "body:x", "cjk:记忆", "c1", "u410", "NEAR(a b)", "\"the docker\"", "When did we talk about"
] as const

const scopeQuery = Arbitrary.all({
  parts: Arbitrary.array(Arbitrary.schema(Schema.Literals(PIECES)), { minLength: 1, maxLength: 6 }),
  raw: Arbitrary.schema(Schema.String),
  withRaw: Arbitrary.schema(Schema.Boolean)
}).pipe(Arbitrary.map(({ parts, raw, withRaw }) => `${parts.join(" ")}${withRaw ? ` ${raw}` : ""}`))

const scopeCase = Arbitrary.all({
  specs: Arbitrary.array(sessionSpec, { minLength: 3, maxLength: 3 }),
  users: Arbitrary.schema(int(0, USER_PAIRS.length - 1)),
  compact: Arbitrary.array(Arbitrary.schema(Schema.Boolean), { minLength: 3, maxLength: 3 }),
  queries: Arbitrary.array(scopeQuery, { minLength: 4, maxLength: 8 }),
  context: Arbitrary.schema(int(0, 3))
})

for (const db of testDatabases(sqliteTemp)) {
describe(`memory properties: search scope (${db.name})`, () => {
  it.live.prop(
    "no query, whatever its text, in either mode, returns a hit (or a neighbour) outside its scope",
    { c: scopeCase },
    ({ c }) =>
      Effect.scoped(Effect.gen(function*() {
        const file = (yield* db.open).layer
        const [userA, userB] = USER_PAIRS[c.users] ?? ["A", "B"]
        const sessions: ReadonlyArray<readonly [string, string]> = [
          [`agent:test:${userA}:one`, userA],
          [`agent:test:${userB}:one`, userB],
          [`agent:test:${userB}:two`, userB]
        ]
        yield* Effect.gen(function*() {
          const memory = yield* MemoryProvider
          const compactor = yield* Compactor
          const searcher = yield* Searcher
          const store = yield* MemoryStore
          const seqs = new Map<string, number>()
          for (let i = 0; i < sessions.length; i++) {
            const [key, userId] = sessions[i] ?? ["", ""]
            const spec = c.specs[i] ?? { seed: i, length: 20, large: 0, tools: 2, cjk: 3, weird: 1, huge: 0 }
            const messages = sessionMessages({ ...spec, length: spec.length % 80 }, key)
            yield* memory.append(sessionRefFromKey(key, { userId }), messages)
            seqs.set(key, messages.length)
            if (c.compact[i] === true) yield* compactor.compact(key, { full: true, freshTail: 4 })
          }
          const owned = new Map<string, Owned>()
          for (const [key] of sessions) owned.set(key, yield* ownedBy([key]))
          const scopes: ReadonlyArray<readonly [SearchScope, ReadonlyArray<string>]> = [
            ...sessions.map(([key]): readonly [SearchScope, ReadonlyArray<string>] => [{ _tag: "Session", sessionKey: key }, [key]]),
            [{ _tag: "User", userId: userA }, [sessions[0]?.[0] ?? ""]],
            [{ _tag: "User", userId: userB }, [sessions[1]?.[0] ?? "", sessions[2]?.[0] ?? ""]]
          ]
          for (const q of c.queries) {
            for (const mode of ["ranked", "strict"] as const) {
              for (const [scope, keys] of scopes) {
                const what = `${mode} ${JSON.stringify(q)} in ${JSON.stringify(scope)}`
                const hits = yield* searcher.search(q, { scope, mode, limit: 100, context: c.context })
                assertWithin(hits, yield* ownedBy(keys), what)
                // Strict matches the row's own text only: its neighbouring turns change nothing (issue 25).
                if (mode === "strict") {
                  const own = yield* searcher.search(q, { scope, mode, limit: 100, context: c.context, neighbours: false })
                  assert.deepStrictEqual(hits, own, `${what}: neighbours changed a strict search`)
                } else {
                  // The row's own text only (as before issue 25): within the scope too.
                  const own = yield* searcher.search(q, { scope, mode, limit: 100, context: c.context, neighbours: false })
                  assertWithin(own, yield* ownedBy(keys), `${what}, own text only`)
                }
                for (const h of hits) {
                  assert.isArray(h.matched, what)
                  const mine = owned.get(h.sessionKey)
                  if (h.kind === "summary") {
                    assert.isDefined(h.covers, `${what}: ${h.id} has no coverage`)
                    assert.isAtLeast(h.covers?.firstSeq ?? 0, 1, what)
                    assert.isAtMost(h.covers?.lastSeq ?? Infinity, seqs.get(h.sessionKey) ?? 0, what)
                    continue
                  }
                  if (c.context === 0) {
                    assert.isUndefined(h.context, what)
                    continue
                  }
                  // Neighbours: messages of the hit's own session, next to it, never the hit itself.
                  const around = h.context ?? []
                  const total = seqs.get(h.sessionKey) ?? 0
                  const expected = Math.min(total, (h.seq ?? 0) + c.context) - Math.max(1, (h.seq ?? 0) - c.context)
                  assert.strictEqual(around.length, expected, `${what}: ${h.id} #${h.seq} has ${around.length} neighbours`)
                  for (const m of around) {
                    assert.isTrue(mine?.messages.has(Number(m.id.slice(4))) === true, `${what}: neighbour ${m.id} of ${h.id} is not in ${h.sessionKey}`)
                    assert.isAtMost(Math.abs(m.seq - (h.seq ?? 0)), c.context, what)
                    assert.notStrictEqual(m.seq, h.seq, what)
                  }
                }
              }
            }
          }
          // The search index is in step with the tables after all of it.
          assert.deepStrictEqual(yield* store.integrityCheck, [])
        }).pipe(Effect.provide(lcmOn(file), { local: true }))
      })),
    { timeout: 170_000, arbitrary: { runs: 12, maxShrinks: 20 } }
  )
})
}
