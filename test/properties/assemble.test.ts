/**
 * Assembly over random sessions, densely: a session cut at a random point (so it may end in a tool
 * call still waiting for its results), compacted a random number of times with random fresh tails
 * (0 included), then more messages appended, then many assemblies with random budgets and fresh
 * tails through LcmMemory (over its live items) and SimpleMemory (over its view:
 * LCM's newest live summary and the messages after it) on the same file. Each assembly is checked
 * for order (chronological, whole units), the fresh tail verbatim, budget (≤ budget unless the
 * fresh tail alone exceeds it) and tool pairing.
 *
 * The pairing repair (the last step of every assembly) is also checked on its own, over sessions
 * damaged at random (messages dropped, swapped, duplicated, re-roled, emptied, tool ids reused
 * across turns): its output always
 * passes the validator, never costs more tokens, and leaves a valid conversation untouched.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { repairPairing } from "../../src/domain/memory/render.ts"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import type { Message } from "../../src/domain/message.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { sqliteTemp } from "../support/db.ts"
import { testDatabases } from "../support/postgres.ts"
import { assertAssembled, checkState, pairingProblems, plain, simpleViewTokens, snapshot, sumTokens } from "./support/check.ts"
import { lcmOn, simpleOn } from "./support/layers.ts"
import { buildSession, engineConfig, engineSpec, int, rng, sessionSpec } from "./support/sessions.ts"

const caseArb = Arbitrary.all({
  session: sessionSpec,
  engine: engineSpec,
  /** Per mille of the messages appended before compacting, and how many compactions. */
  cut: Arbitrary.schema(int(0, 1000)),
  compactions: Arbitrary.array(
    Arbitrary.schema(Schema.Struct({ full: Schema.Boolean, freshTail: int(0, 12) })),
    { maxLength: 4 }
  ),
  /** Messages appended after the compactions (cut anywhere, possibly inside a tool unit). */
  later: Arbitrary.schema(int(0, 40)),
  assemblies: Arbitrary.schema(int(5, 20))
})

for (const db of testDatabases(sqliteTemp)) {
  describe(`memory properties: assembly (${db.name})`, () => {
    it.live.prop(
      "order, fresh tail, budget and pairing over compacted sessions, LCM and Simple",
      { c: caseArb },
      ({ c }) =>
        Effect.scoped(Effect.gen(function*() {
          const file = (yield* db.open).layer
          const messages = buildSession(c.session)
          const first = Math.round((messages.length * c.cut) / 1000)
          const total = Math.min(messages.length, first + c.later)
          const sessionKey = "agent:test:someone:assemble"
          const session = sessionRefFromKey(sessionKey)
          const r = rng(c.session.seed ^ 0x5bd1e995)
          const config = engineConfig(c.engine)

          const assembleMany = (mode: "lcm" | "simple") =>
            Effect.gen(function*() {
              const memory = yield* MemoryProvider
              const appended = messages.slice(0, total)
              const snap = yield* snapshot(sessionKey)
              const context = mode === "lcm" ? snap.items.reduce((n, it) => n + it.tokens, 0) : simpleViewTokens(snap)
              for (let i = 0; i < c.assemblies; i++) {
                const budget = r.chance(0.8) ? Math.max(1, Math.round(context * r.next() * 1.3)) : r.int(1, 400)
                const freshTail = r.chance(0.1) ? 0 : r.int(1, 30)
                const assembled = yield* memory.assemble(sessionKey, { budget, freshTail })
                assertAssembled({ assembled, snap, appended, budget, freshTail, mode })
              }
            })

          yield* Effect.gen(function*() {
            const memory = yield* MemoryProvider
            const compactor = yield* Compactor
            yield* memory.bootstrap(session)
            yield* memory.append(session, messages.slice(0, first))
            for (const k of c.compactions) yield* compactor.compact(sessionKey, k)
            yield* memory.append(session, messages.slice(first, total))
            yield* checkState(sessionKey, messages.slice(0, total), c.session.seed)
            yield* assembleMany("lcm")
          }).pipe(Effect.provide(lcmOn(file, config), { local: true }))

          yield* assembleMany("simple").pipe(Effect.provide(simpleOn(file), { local: true }))
        })),
      { timeout: 170_000, arbitrary: { runs: 60, maxShrinks: 40 } }
    )

    it.prop(
      "pairing repair: any damaged conversation comes out valid, never larger, valid ones untouched",
      { session: sessionSpec, damage: Arbitrary.array(Arbitrary.schema(int(0, 1_000_000)), { maxLength: 12 }) },
      ({ session, damage }) => {
        const messages: Array<Message> = buildSession({ ...session, length: session.length % 80, large: 1 }).map(plain)
        for (const d of damage) {
          const i = d % Math.max(1, messages.length)
          const m = messages[i]
          if (m === undefined) continue
          switch (d % 7) {
            case 0:
              messages.splice(i, 1)
              break
            case 1:
              messages.splice(i, 2, ...messages.slice(i, i + 2).reverse())
              break
            case 2:
              messages.splice(i, 0, m)
              break
            case 3:
              messages[i] = { role: (["user", "assistant", "tool_result"] as const)[d % 3] ?? "user", content: m.content }
              break
            case 4:
              messages.splice(i, 0, { role: m.role, content: d % 2 === 0 ? "" : [{ type: "text", text: "" }] })
              break
            case 5:
              messages.splice(i, 0, { role: "assistant", content: [{ type: "tool_use", id: `t${d}`, name: "x", input: {} }] })
              break
            case 6: {
              // Ids reused across turns, as some providers do (call_0, call_1, … in every turn).
              const reuse = (id: string) => `call_${Number(id.replace(/\D+/g, "")) % 3}`
              messages.forEach((x, j) => {
                if (typeof x.content === "string") return
                messages[j] = {
                  role: x.role,
                  content: x.content.map((b) =>
                    b.type === "tool_use"
                      ? { ...b, id: reuse(b.id) }
                      : b.type === "tool_result"
                      ? { ...b, tool_use_id: reuse(b.tool_use_id) }
                      : b
                  )
                }
              })
              break
            }
          }
        }
        const repaired = repairPairing(messages)
        assert.deepStrictEqual(pairingProblems(repaired), [], `repaired conversation: ${JSON.stringify(pairingProblems(repaired))}`)
        assert.isAtMost(sumTokens(repaired), sumTokens(messages), "the repair added tokens")
        if (pairingProblems(messages).length === 0) {
          assert.strictEqual(repaired.length, messages.length)
          for (const [i, m] of repaired.entries()) assert.strictEqual(m, messages[i], `valid message ${i} was changed`)
        }
      },
      { timeout: 60_000, arbitrary: { runs: 1000, maxShrinks: 200 } }
    )
  })
}
