/**
 * `anna diary reflect <session> [--json]` through the real CLI on a fresh ANNA_HOME whose database
 * holds a session and a provider pointing at the fake LLM: the entry is printed (text and JSON),
 * nothing new is one line and exit 0, an unknown session is exit 1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { afterAll, beforeAll } from "vitest"
import type { DiaryEntry } from "../../../src/domain/learning/diary.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { anna, newHome } from "../../support/cli.ts"
import { modelStores, homeDatabase } from "../../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { text } from "../../support/fakeLlm/script.ts"
import { AGENT, exchange, KEY, reflectionJson } from "./ReflectiveLearningHarness.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

/** A home whose database holds the provider, the agent and one exchange in KEY. */
const seeded = async (): Promise<string> => {
  const home = newHome()
  homes.push(home)
  await Effect.runPromise(
    Effect.gen(function*() {
      yield* (yield* ProviderStore).add({
        id: "local",
        type: "openai",
        baseUrl: fake.openAiUrl,
        apiKey: "sk-local-abcdef",
        models: [],
        defaultModel: "fake-large",
        headers: {},
        enabled: true
      })
      yield* (yield* AgentStore).create(AGENT, { providerId: "local" })
      const store = yield* MemoryStore
      const c = yield* store.ensureConversation(sessionRefFromKey(KEY))
      yield* store.appendMessages(c.id, exchange())
    }).pipe(Effect.provide(Layer.merge(modelStores, SqliteMemoryStore.layer).pipe(Layer.provide(homeDatabase(home)))))
  )
  return home
}

describe("anna diary reflect", () => {
  it("prints the entry written, then that nothing is new; --json both ways", async () => {
    const home = await seeded()
    fake.reset()
    fake.script(text(reflectionJson({ rules: [] })))
    const first = await anna(home, "diary", "reflect", KEY, "--json")
    assert.strictEqual(first.code, 0, first.stderr)
    const written = JSON.parse(first.stdout) as { reflected: boolean; entry: DiaryEntry }
    assert.deepStrictEqual([written.reflected, written.entry.sessionKey, written.entry.source, written.entry.trigger], [true, KEY, "model", "demand"])
    const again = await anna(home, "diary", "reflect", KEY, "--json")
    assert.strictEqual(again.code, 0, again.stderr)
    assert.deepStrictEqual(JSON.parse(again.stdout), { reflected: false, reason: "no new messages since the last diary entry" })
    const plain = await anna(home, "diary", "reflect", KEY)
    assert.strictEqual(plain.stdout.trim(), `Nothing reflected for ${KEY}: no new messages since the last diary entry.`)
  })

  it("prints the entry as text; an unknown session is exit 1", async () => {
    const home = await seeded()
    fake.reset()
    fake.script(text(reflectionJson({ rules: [], key_learnings: ["Digests never move"] })))
    const run = await anna(home, "diary", "reflect", KEY)
    assert.strictEqual(run.code, 0, run.stderr)
    assert.match(run.stdout, /^diary_\S+ {2}success {2}quality 0\.90 {2}\(model, demand, /)
    assert.include(run.stdout, "key learnings:\n  - Digests never move")
    const unknown = await anna(home, "diary", "reflect", "nobody:cli:x:main")
    assert.strictEqual(unknown.code, 1)
    assert.include(unknown.stderr, `no session "nobody:cli:x:main" in memory`)
  })
})
