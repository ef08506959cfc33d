import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { Searcher } from "../../src/services/Searcher.ts"
import { lcmTemp } from "../support/db.ts"

describe("smoke", () => {
  it.effect("append, compact, assemble, search", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const compactor = yield* Compactor
      const searcher = yield* Searcher
      const session = sessionRefFromKey("a1:cli:u1:main")
      const msgs = Array.from({ length: 200 }, (_, i) => ({
        role: (i % 2 === 0 ? "user" : "assistant") as "user" | "assistant",
        content: `Message number ${i}. We talked about docker containers and 记忆系统 number ${i}. More text follows here.`,
        createdAt: 1_700_000_000_000 + i * 1000
      }))
      yield* memory.append(session, msgs)
      const report = yield* compactor.compact(session.key, { full: true })
      console.log(report)
      const a = yield* memory.assemble(session.key, { budget: 2000 })
      console.log(a.tokens, a.messages.length, a.summaries, a.freshTailMessages)
      const hits = yield* searcher.search("docker", { scope: { _tag: "Session", sessionKey: session.key } })
      console.log(hits.slice(0, 3))
      const cjk = yield* searcher.search("记忆", { scope: { _tag: "User", userId: "u1" } })
      console.log(cjk.slice(0, 2))
      const cjk3 = yield* searcher.search("记忆系统", { scope: { _tag: "User", userId: "u1" } })
      console.log(cjk3.slice(0, 2))
      assert.isTrue(report.compacted)
    }).pipe(Effect.provide(lcmTemp)))
})
