/**
 * webfetch end to end through the whole runtime (Compose.agentRuntime with the production webfetch
 * layer, the fake LLM server over the OpenAI SDK, real SQLite): the model calls webfetch on a page
 * served on 127.0.0.1 — allowed because the agent's plugin configuration says `allow_private=true` —
 * and gets its Markdown back; an agent for which the plugin is switched off is not even shown the tool,
 * and without `allow_private` the same call is refused by the guard.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { ChatTarget, TurnEvent } from "../../../src/domain/runtime/types.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { PluginStore } from "../../../src/services/PluginStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { sqliteTemp } from "../../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../../support/fakeLlm/server.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"

const PAGE = `<html><head><title>Release notes</title></head><body><nav>MENU-JUNK <a href="/">Home</a></nav>
<main><article><h1>Release notes</h1><p>Version 7 brings incremental compaction to every memory plugin, a faster
session pool and a new <a href="/docs/scheduler">scheduler</a>. Upgrading needs no migration by hand: the gateway applies
them at start. Operators should read the notes on sandbox images before upgrading production hosts.</p>
<p>Version 7 also drops support for Node 20, which lacks node:sqlite; use Node 22.19 or newer.</p></article></main></body></html>`

let fake: FakeLlm
let server: Server
let page = ""
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
  server = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE))
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  page = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notes`
})
beforeEach(() => fake.reset())
/** The requests the fake server got from index `from` on (it keeps every request of the file). */
const since = (from: number) => fake.requests.slice(from)
afterAll(async () => {
  await fake.close()
  await new Promise<void>((done) => server.close(() => done()))
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-webfetch-"))
  homes.push(home)
  return Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

const alice: ChatTarget = { platform: "cli", externalUserId: "alice", userName: "Alice" }

const say = (text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(alice)
    return yield* Stream.runCollect(runtime.send(chat, text))
  })

const toolEnds = (events: ReadonlyArray<TurnEvent>) =>
  events.filter((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")

const toolNames = (body: unknown): ReadonlyArray<string> => {
  const tools = (body as { tools?: ReadonlyArray<{ function?: { name?: string } }> }).tools ?? []
  return tools.map((t) => t.function?.name ?? "")
}

const setup = (config: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    yield* (yield* ProviderStore).add(localProvider(fake))
    yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["webfetch", "memory"] })
    if (Object.keys(config).length > 0) yield* (yield* PluginStore).configure("webfetch", "a1", { set: config, unset: [] })
  })

describe("webfetch through the runtime", () => {
  it.effect("the model reads a page as Markdown when the agent's policy allows the local address", () =>
    Effect.gen(function*() {
      yield* setup({ allow_private: true })
      const from = fake.requests.length
      fake.script(
        { kind: "reply", parts: [{ type: "tool_call", id: "w1", name: "webfetch", input: { url: page } }] },
        { kind: "reply", parts: [{ type: "text", text: "Version 7 drops Node 20." }] }
      )
      const events = yield* say("what changed in version 7?")
      const [end] = toolEnds(events)
      assert.strictEqual(end?.isError, false, end?.output)
      assert.include(end?.output ?? "", "# Release notes")
      assert.include(end?.output ?? "", `[scheduler](${new URL(page).origin}/docs/scheduler)`)
      assert.notInclude(end?.output ?? "", "MENU-JUNK")
      const [first, second] = since(from)
      assert.include(toolNames(first?.body), "webfetch")
      assert.include(JSON.stringify(second?.body), "incremental compaction")
    }).pipe(Effect.provide(stack())))

  it.effect("without allow_private the guard refuses the same call", () =>
    Effect.gen(function*() {
      yield* setup({})
      fake.script(
        { kind: "reply", parts: [{ type: "tool_call", id: "w1", name: "webfetch", input: { url: page } }] },
        { kind: "reply", parts: [{ type: "text", text: "I cannot read that." }] }
      )
      const [end] = toolEnds(yield* say("read this"))
      assert.strictEqual(end?.isError, true)
      assert.include(end?.output ?? "", "127.0.0.1 is a loopback address")
    }).pipe(Effect.provide(stack())))

  it.effect("with the plugin switched off for the agent, the model is never shown the tool", () =>
    Effect.gen(function*() {
      yield* setup({ allow_private: true })
      yield* (yield* PluginStore).setFor("webfetch", "a1", false)
      const from = fake.requests.length
      fake.script({ kind: "reply", parts: [{ type: "text", text: "hello" }] })
      yield* say("hi")
      const [first] = since(from)
      assert.isDefined(first)
      const names = toolNames(first?.body)
      assert.include(names, "memory")
      assert.notInclude(names, "webfetch")
    }).pipe(Effect.provide(stack())))

  it.effect("switching the plugin for the agent applies from the next turn of a live session, both ways", () =>
    Effect.gen(function*() {
      yield* setup({ allow_private: true })
      const plugins = yield* PluginStore
      const offered = Effect.gen(function*() {
        const from = fake.requests.length
        fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
        yield* say("hi")
        return toolNames(since(from)[0]?.body).includes("webfetch")
      })
      assert.isTrue(yield* offered)
      yield* plugins.setFor("webfetch", "a1", false)
      assert.isFalse(yield* offered, "off from the next turn, not when the runner idles out")
      yield* plugins.setFor("webfetch", "a1", true)
      assert.isTrue(yield* offered, "on again from the next turn")
    }).pipe(Effect.provide(stack())))
})
