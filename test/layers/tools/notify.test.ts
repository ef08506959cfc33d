/**
 * The notify tool above the Channels contract (stubbed here: the channels themselves are tested on
 * the fake platforms): offered only when a channel that can push runs and the agent allows it;
 * writes only to the session's user; refuses empty, oversized and undeliverable messages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ChannelError } from "../../../src/domain/channels/errors.ts"
import * as Notifier from "../../../src/layers/channels/Notifier.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { MAX_NOTIFY_CHARS, notifySource } from "../../../src/layers/tools/notify.ts"
import type { ChannelTarget, OutboundMessage } from "../../../src/services/Channel.ts"
import { Channels, type ChannelStatus } from "../../../src/services/Channels.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import type { SandboxSession } from "../../../src/services/Sandbox.ts"
import type { ToolSession } from "../../../src/services/ToolCatalog.ts"
import { sqliteTemp, tempDir } from "../../support/db.ts"

const stores = Layer.unwrap(Effect.sync(() => SqliteRuntimeConfig.layerWithStores(tempDir("anna-notify-")))).pipe(Layer.provideMerge(sqliteTemp))

const channelsOf = (status: ReadonlyArray<ChannelStatus>, sent: Array<[string, ChannelTarget, OutboundMessage]>) =>
  Channels.of({
    status: Effect.succeed(status),
    notify: (id, target, message) =>
      id === "telegram" ? Effect.sync(() => void sent.push([id, target, message])) : Effect.fail(new ChannelError({ channel: id, reason: "cannot push" }))
  })

/** The dispatcher over stubbed channels and the real config store. */
const notifierOf = (channels: Channels["Service"], config: ConfigStore["Service"]) =>
  Notifier.make.pipe(Effect.provideService(Channels, channels), Effect.provideService(ConfigStore, config))

const session = (userId: string, enabled: (name: string) => boolean = () => true): ToolSession => ({
  agentId: "a",
  userId,
  sessionKey: `a:telegram:${userId}:dm`,
  enabled,
  sandbox: Effect.die("no sandbox here")
})

describe("notify tool", () => {
  it.effect("is offered only while a channel that can push runs, and only to agents that allow it", () =>
    Effect.gen(function*() {
      const config = yield* ConfigStore
      const running = (id: string): ChannelStatus => ({ id, state: "running" })
      const tools = (status: ReadonlyArray<ChannelStatus>, s: ToolSession) =>
        Effect.scoped(Effect.flatMap(notifierOf(channelsOf(status, []), config), (n) => notifySource(n).tools(s)))
      assert.deepStrictEqual((yield* tools([running("http")], session("u"))).length, 0)
      assert.deepStrictEqual((yield* tools([{ id: "telegram", state: "failed" }], session("u"))).length, 0)
      assert.deepStrictEqual((yield* tools([running("telegram")], session("u", (n) => n !== "notify"))).length, 0)
      const [tool] = yield* tools([running("http"), running("telegram")], session("u"))
      assert.strictEqual(tool?.definition.name, "notify")
    }).pipe(Effect.provide(stores)))

  it.effect("writes to the session's own user on their channel; refuses what it cannot deliver", () =>
    Effect.gen(function*() {
      const config = yield* ConfigStore
      const ann = yield* config.upsertUser("telegram", "501", "Ann")
      yield* config.createUser("bob", "Bob")
      const sent: Array<[string, ChannelTarget, OutboundMessage]> = []
      const notifier = yield* notifierOf(channelsOf([{ id: "telegram", state: "running" }], sent), config)
      const [tool] = yield* Effect.scoped(notifySource(notifier).tools(session(ann.id)))
      if (tool === undefined) return assert.fail("no tool")
      const call = (input: unknown, userId = ann.id) => tool.execute(input, { sessionKey: `a:telegram:${userId}:dm`, userId, agentId: "a" })
      assert.strictEqual(yield* call({ text: "Stretch!" }), "Delivered on telegram.")
      // Another user than the session's cannot be named: the input has no such field, and the target is the caller.
      assert.strictEqual(yield* call({ text: "hi", userId: "bob" }), "Delivered on telegram.")
      assert.deepStrictEqual(sent.map(([id, t, m]) => [id, t.userId, m.text]), [["telegram", ann.id, "Stretch!"], ["telegram", ann.id, "hi"]])
      const reason = (e: { readonly reason: string }) => e.reason
      assert.include(reason(yield* Effect.flip(call({ text: " " }))), "empty")
      assert.include(reason(yield* Effect.flip(call({ text: "x".repeat(MAX_NOTIFY_CHARS + 1) }))), "longer than")
      assert.include(reason(yield* Effect.flip(call({ text: "hi", channel: "http" }))), "cannot deliver")
      assert.include(reason(yield* Effect.flip(call({ text: "hi" }, "bob"))), "never written on telegram")
      assert.include(reason(yield* Effect.flip(call({ nope: 1 }))), "invalid input")
    }).pipe(Effect.provide(stores)))

  it.effect("at most NOTIFY_LIMIT notifications per user a minute; the window slides", () =>
    Effect.gen(function*() {
      const config = yield* ConfigStore
      const ann = yield* config.upsertUser("telegram", "601", "Ann")
      const bob = yield* config.upsertUser("telegram", "602", "Bob")
      const sent: Array<[string, ChannelTarget, OutboundMessage]> = []
      const notifier = yield* notifierOf(channelsOf([{ id: "telegram", state: "running" }], sent), config)
      for (let i = 0; i < Notifier.NOTIFY_LIMIT; i++) yield* notifier.notify(ann.id, { text: `n${i}` })
      const over = yield* Effect.flip(notifier.notify(ann.id, { text: "one too many" }))
      assert.include(over.reason, `${Notifier.NOTIFY_LIMIT} notifications in the last minute`)
      // Another user is not held back by Ann's.
      assert.strictEqual(yield* notifier.notify(bob.id, { text: "hi Bob" }), "telegram")
      yield* TestClock.adjust("61 seconds")
      assert.strictEqual(yield* notifier.notify(ann.id, { text: "later" }), "telegram")
      assert.strictEqual(sent.length, Notifier.NOTIFY_LIMIT + 2)
      assert.notInclude(sent.map(([, , m]) => m.text), "one too many")
    }).pipe(Effect.provide(stores)))

  it.effect("the limit is the user's across gateways on one database and across a restart (issue 28)", () =>
    Effect.gen(function*() {
      const config = yield* ConfigStore
      const ann = yield* config.upsertUser("telegram", "651", "Ann")
      const sent: Array<[string, ChannelTarget, OutboundMessage]> = []
      const channels = channelsOf([{ id: "telegram", state: "running" }], sent)
      // Two gateways (two dispatchers over one database) take turns with Ann's notifications.
      const first = yield* notifierOf(channels, config)
      const second = yield* notifierOf(channels, config)
      for (let i = 0; i < Notifier.NOTIFY_LIMIT; i++) yield* (i % 2 === 0 ? first : second).notify(ann.id, { text: `n${i}` })
      assert.include((yield* Effect.flip(second.notify(ann.id, { text: "over" }))).reason, "in the last minute; the next can go in 60 s")
      yield* TestClock.adjust("30 seconds")
      // A restarted gateway (a new dispatcher) still counts them, and says when the oldest leaves the window.
      const restarted = yield* notifierOf(channels, config)
      assert.include((yield* Effect.flip(restarted.notify(ann.id, { text: "over" }))).reason, "the next can go in 30 s")
      yield* TestClock.adjust("31 seconds")
      assert.strictEqual(yield* restarted.notify(ann.id, { text: "later" }), "telegram")
      assert.strictEqual(sent.length, Notifier.NOTIFY_LIMIT + 1)
    }).pipe(Effect.provide(stores)))

  it.effect("sends a workspace image read through the sandbox; refuses a file that is no image", () =>
    Effect.gen(function*() {
      const config = yield* ConfigStore
      const ann = yield* config.upsertUser("telegram", "701", "Ann")
      const sent: Array<[string, ChannelTarget, OutboundMessage]> = []
      const notifier = yield* notifierOf(channelsOf([{ id: "telegram", state: "running" }], sent), config)
      const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64")
      const files: Record<string, Uint8Array> = { "/workspace/dot.png": png, "/workspace/notes.txt": Buffer.from("just text") }
      const read: Array<string> = []
      // The sandbox's confined readFile is the contract here (its own tests cover the confinement).
      const sandbox = Effect.succeed({
        readFile: (path: string, limits: { readonly maxBytes: number }) =>
          Effect.sync(() => {
            read.push(`${path}@${limits.maxBytes}`)
            return { _tag: "File" as const, bytes: files[path] ?? new Uint8Array() }
          })
      } as unknown as SandboxSession)
      const [tool] = yield* Effect.scoped(notifySource(notifier).tools({ ...session(ann.id), sandbox }))
      if (tool === undefined) return assert.fail("no tool")
      const ctx = { sessionKey: `a:telegram:${ann.id}:dm`, userId: ann.id, agentId: "a" }
      assert.strictEqual(yield* tool.execute({ text: "the chart", image: "/workspace/dot.png" }, ctx), "Delivered on telegram.")
      const [, , message] = sent[0] ?? []
      assert.deepStrictEqual(message?.images?.map((i) => [i.mediaType, i.name, i.bytes.length]), [["image/png", "dot.png", png.length]])
      assert.deepStrictEqual(read, [`/workspace/dot.png@${10 * 1024 * 1024}`])
      const refused = yield* Effect.flip(tool.execute({ text: "", image: "/workspace/notes.txt" }, ctx))
      assert.include(refused.reason, "not a PNG, JPEG, GIF or WebP image")
      assert.strictEqual(sent.length, 1)
    }).pipe(Effect.provide(stores)))
})
