/**
 * `/compact` over real memory on SQLite: with memory/simple it compacts into one handoff summary
 * and replies with its text and the tokens before and after; with memory/lcm it reports the DAG
 * compaction and the top summary, as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { HANDOFF_SECTIONS } from "../../../src/domain/memory/handoff.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { ResolvedChat } from "../../../src/domain/runtime/types.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import { replyText, runCommand } from "../../../src/layers/runtime/commands.ts"
import * as SimpleMemory from "../../../src/layers/memory/SimpleMemory.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { sqliteTemp, tempDir } from "../../support/db.ts"
import { chat } from "../../support/memory.ts"

const KEY = "a1:cli:u1:main"
const resolved: ResolvedChat = {
  userId: "u1",
  userName: "",
  agentId: "a1",
  platform: "cli",
  chatId: "main",
  isGroup: false,
  context: "main",
  sessionKey: KEY,
  model: ""
}

/** What runCommand needs besides memory: ConfigStore, AgentStore and ProviderRegistry. */
const config = () => {
  const stores = SqliteRuntimeConfig.layerWithStores(tempDir())
  return Layer.merge(stores, ProviderClients.layer().pipe(Layer.provide(stores)))
}
const withMemory = <A, E, R>(memory: Layer.Layer<A, E, R>) =>
  Layer.merge(config(), memory.pipe(Layer.provide(DeterministicSummarizer.layer))).pipe(Layer.provideMerge(sqliteTemp))
const simple = () => withMemory(SimpleMemory.layerSqlite)
const lcm = () => withMemory(LcmMemory.layerSqlite)

const compact = runCommand(resolved, "/compact", Effect.succeed(false)).pipe(Effect.map(replyText))

describe("/compact", () => {
  it.effect("with memory/simple replies with the handoff summary and the tokens before and after", () =>
    Effect.gen(function*() {
      const messages = [{ role: "user" as const, content: "Set up nightly backups of the wiki." }, ...chat(60, 1)]
      yield* (yield* MemoryProvider).append(sessionRefFromKey(KEY), messages)
      const reply = yield* compact
      const m = /^Compacted: (\d+) → (\d+) tokens\. .*\((sum_\d+)\):\n\n([\s\S]*)$/.exec(reply)
      assert.isNotNull(m, reply)
      assert.isBelow(Number(m?.[2]), Number(m?.[1]))
      const store = yield* MemoryStore
      const [stored] = yield* store.summariesByIds([Number(m?.[3]?.slice(4))])
      assert.strictEqual(m?.[4], stored?.content)
      for (const h of HANDOFF_SECTIONS) assert.include(reply, `\n## ${h}\n`)
      assert.include(reply, "## Goal\nSet up nightly backups of the wiki.")
      assert.match(yield* compact, /^Nothing to compact yet \(\d+ tokens in context; stop: no_candidates\)\.$/)
    }).pipe(Effect.provide(simple())))

  it.effect("with memory/lcm reports the DAG compaction and the top summary", () =>
    Effect.gen(function*() {
      yield* (yield* MemoryProvider).append(sessionRefFromKey(KEY), chat(80))
      const reply = yield* compact
      assert.match(reply, /^Compacted: \d+ → \d+ tokens \(\d+ leaf \+ \d+ condensed summaries\)\.\n\nSummary \(sum_\d+\):\n/)
    }).pipe(Effect.provide(lcm())))

  it.effect("with memory/lcm shows the summaries this compaction made, not the oldest live one", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const sql = yield* SqlClient
      // Two rounds leave a condensed summary (depth 1) at the head of the context.
      yield* memory.append(sessionRefFromKey(KEY), chat(80))
      yield* compact
      yield* memory.append(sessionRefFromKey(KEY), chat(40, 80))
      yield* compact
      const [before] = yield* sql<{ last: number }>`SELECT max(id) AS last FROM ctx_summaries`
      const older = before?.last ?? 0
      assert.isAbove(older, 0)
      // New messages, then /compact again: its leaf summary follows the older one in the context.
      yield* memory.append(sessionRefFromKey(KEY), chat(40, 120))
      const reply = yield* compact
      const shown = [...reply.matchAll(/\n\nSummary \(sum_(\d+)\):\n/g)].map((m) => Number(m[1]))
      assert.isNotEmpty(shown, reply)
      for (const id of shown) assert.isAbove(id, older, `shows sum_${id}, made before this /compact:\n${reply}`)
      const assembled = yield* memory.assemble(KEY, { budget: 1_000_000 })
      const live = assembled.messages.flatMap((m) => typeof m.content === "string" ? [...m.content.matchAll(/id="sum_(\d+)"/g)].map((x) => Number(x[1])) : [])
      for (const id of shown) assert.include(live, id)
      assert.include(reply, "Message 100.")
    }).pipe(Effect.provide(lcm())))
})
