import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { SessionManager } from "../../src/services/SessionManager.ts"
import { lcmTemp } from "../support/db.ts"

describe("scratch", () => {
  it.effect("roundtrip", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const sm = yield* SessionManager
      const s = sessionRefFromKey("a:b:c:d")
      const texts = ["a\u0000b", "x\ud800y", "\udc00", "ok 😀", "\u0001\u001f"]
      yield* memory.append(s, texts.map((t) => ({ role: "user" as const, content: t, createdAt: 1 })))
      yield* memory.append(s, texts.map((t) => ({ role: "user" as const, content: [{ type: "text" as const, text: t }], createdAt: 1 })))
      const h = yield* sm.loadHistory(s.key)
      for (const m of h) console.log(JSON.stringify(m.message.content))
      assert.isTrue(true)
    }).pipe(Effect.provide(lcmTemp)))
})
