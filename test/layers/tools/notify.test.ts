/**
 * The notify tool above the Channels contract (stubbed here: the channels themselves are tested on
 * the fake platforms): offered only when a channel that can push runs and the agent allows it;
 * writes only to the session's user; refuses empty, oversized and undeliverable messages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ChannelError } from "../../../src/domain/channels/errors.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { MAX_NOTIFY_CHARS, notifySource } from "../../../src/layers/tools/notify.ts"
import type { ChannelTarget, OutboundMessage } from "../../../src/services/Channel.ts"
import { Channels, type ChannelStatus } from "../../../src/services/Channels.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import type { ToolSession } from "../../../src/services/ToolCatalog.ts"
import { sqliteTemp, tempDir } from "../../support/db.ts"

const stores = Layer.unwrap(Effect.sync(() => SqliteRuntimeConfig.layerWithStores(tempDir("anna-notify-")))).pipe(Layer.provideMerge(sqliteTemp))

const channelsOf = (status: ReadonlyArray<ChannelStatus>, sent: Array<[string, ChannelTarget, OutboundMessage]>) =>
  Channels.of({
    status: Effect.succeed(status),
    notify: (id, target, message) =>
      id === "telegram" ? Effect.sync(() => void sent.push([id, target, message])) : Effect.fail(new ChannelError({ channel: id, reason: "cannot push" }))
  })

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
        Effect.scoped(notifySource(channelsOf(status, []), config).tools(s))
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
      const [tool] = yield* Effect.scoped(notifySource(channelsOf([{ id: "telegram", state: "running" }], sent), config).tools(session(ann.id)))
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
})
