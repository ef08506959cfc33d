/**
 * Agents' access policies enforced where every path into a turn passes (Runtime.resolve, issue 13):
 * a named agent (the HTTP channel's model) the user may not use is refused; a group bound to such an
 * agent refuses them politely; a default agent they may not use is passed over for the first one they
 * may; nobody is routed to an agent closed to them; /agent lists and picks only open agents.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { sqliteTemp } from "../../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-access-"))
  homes.push(home)
  return Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

const target = (id: string, over: Partial<ChatTarget> = {}): ChatTarget => ({ platform: "cli", externalUserId: id, userName: id, ...over })

/** Agents: open (everyone), family (attr group=family), bobs (Bob's user id only); created in that order. */
const setup = Effect.gen(function*() {
  yield* (yield* ProviderStore).add(localProvider(fake))
  const config = yield* ConfigStore
  const ann = yield* config.upsertUser("cli", "ann", "ann")
  const bob = yield* config.upsertUser("cli", "bob", "bob")
  yield* config.setUserAttributes(ann.id, { group: "family" })
  const agents = yield* AgentStore
  yield* agents.create("open", { providerId: "local", tools: [] })
  yield* agents.create("family", { providerId: "local", tools: [], access: { kind: "attributes", match: { group: "family" } } })
  yield* agents.create("bobs", { providerId: "local", tools: [], access: { kind: "users", users: [bob.id] } })
  return { ann, bob }
})

const commandText = (chat: Parameters<Runtime["Service"]["send"]>[0], text: string) =>
  Runtime.use((r) => Stream.runCollect(r.send(chat, text))).pipe(
    Effect.map((events) => events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join(""))
  )

describe("access policies in routing", () => {
  it.effect("a named agent closed to the user is refused; an open one is taken", () =>
    Effect.gen(function*() {
      const { ann, bob } = yield* setup
      const runtime = yield* Runtime
      const denied = yield* Effect.flip(runtime.resolve(target("ann", { userId: ann.id, agentId: "bobs" })))
      assert.strictEqual(denied._tag, "AccessDenied")
      assert.include(denied.message, "not open to you")
      assert.strictEqual((yield* runtime.resolve(target("bob", { userId: bob.id, agentId: "bobs" }))).agentId, "bobs")
      assert.strictEqual((yield* runtime.resolve(target("ann", { userId: ann.id, agentId: "family" }))).agentId, "family")
      assert.strictEqual((yield* Effect.flip(runtime.resolve(target("bob", { userId: bob.id, agentId: "family" }))))._tag, "AccessDenied")
    }).pipe(Effect.provide(stack())))

  it.effect("a group bound to a closed agent refuses the user; a closed default agent is passed over; nobody reaches a closed agent", () =>
    Effect.gen(function*() {
      const { ann } = yield* setup
      const config = yield* ConfigStore
      const runtime = yield* Runtime
      yield* config.bindChat("cli", "g1", "bobs")
      assert.strictEqual((yield* Effect.flip(runtime.resolve(target("ann", { chatId: "g1", isGroup: true }))))._tag, "AccessDenied")
      assert.strictEqual((yield* runtime.resolve(target("bob", { chatId: "g1", isGroup: true }))).agentId, "bobs")
      yield* config.setDefaultAgent(ann.id, "bobs")
      assert.strictEqual((yield* runtime.resolve(target("ann"))).agentId, "open")
      // With the open agent gone, the first agent open to each user answers them, and a stranger gets a refusal.
      yield* (yield* AgentStore).update("open", { access: { kind: "users", users: [] } })
      assert.strictEqual((yield* runtime.resolve(target("ann"))).agentId, "family")
      assert.strictEqual((yield* runtime.resolve(target("bob"))).agentId, "bobs")
      const stranger = yield* Effect.flip(runtime.resolve(target("carol")))
      assert.strictEqual(stranger._tag, "AccessDenied")
      assert.include(stranger.message, "no agent here is open to you")
      // Attributes can be taken away again.
      yield* config.setUserAttributes(ann.id, { group: null })
      assert.strictEqual((yield* Effect.flip(runtime.resolve(target("ann"))))._tag, "AccessDenied")
    }).pipe(Effect.provide(stack())))

  it.effect("/agent lists only the agents open to the user, and cannot switch to another", () =>
    Effect.gen(function*() {
      yield* setup
      const runtime = yield* Runtime
      const chat = yield* runtime.resolve(target("ann"))
      const listed = yield* commandText(chat, "/agent")
      assert.include(listed, "1. open (current)\n2. family")
      assert.notInclude(listed, "bobs")
      assert.include(yield* commandText(chat, "/agent bobs"), `No enabled agent "bobs"`)
      assert.include(yield* commandText(chat, "/agent 2"), "You are now talking to family")
    }).pipe(Effect.provide(stack())))

  it.effect("user attributes are checked: a name or value that cannot be matched is refused", () =>
    Effect.gen(function*() {
      const { ann } = yield* setup
      const config = yield* ConfigStore
      for (const [k, v] of [["bad key", "x"], ["group", " "], ["group", "a,b"]] as const) {
        const e = yield* Effect.flip(config.setUserAttributes(ann.id, { [k]: v }))
        assert.strictEqual(e._tag, "InvalidConfig")
      }
      const after = yield* config.setUserAttributes(ann.id, { team: "ops" })
      assert.deepStrictEqual(after.attributes, { group: "family", team: "ops" })
    }).pipe(Effect.provide(stack())))
})
