/**
 * The "done when", through the whole runtime (Compose.agentRuntime with the production
 * scheduler tool, the fake LLM server over the OpenAI SDK, real SQLite) and the real Notifier over a
 * fake Telegram channel, with TestClock: a user on Telegram asks "every morning at 8, summarise my
 * open tasks and send them to me"; the (scripted) model calls the `scheduler` tool; the scheduler
 * loop, started before, sees the job; at 8:00 the job's turn runs and its answer reaches the user on
 * Telegram. Then the tool's own-jobs-only rule: another user sees none of it and cannot remove it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type { ChatTarget, TurnEvent } from "../../src/domain/runtime/types.ts"
import * as Notifier from "../../src/layers/channels/Notifier.ts"
import * as SqliteRuntimeConfig from "../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../src/layers/providers/SdkProviderRegistry.ts"
import * as Scheduler from "../../src/layers/scheduler/Scheduler.ts"
import * as SqliteJobStore from "../../src/layers/scheduler/SqliteJobStore.ts"
import * as Compose from "../../src/programs/compose.ts"
import { AgentStore } from "../../src/services/AgentStore.ts"
import type { ChannelTarget, OutboundMessage } from "../../src/services/Channel.ts"
import { Channels } from "../../src/services/Channels.ts"
import { JobStore } from "../../src/services/JobStore.ts"
import { ProviderStore } from "../../src/services/ProviderStore.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import { sqliteTemp } from "../support/db.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { localProvider } from "../support/runtimeStack.ts"
import { fastTransport } from "../layers/providers/contract.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
beforeEach(() => fake.reset())
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const stack = () => {
  const home = mkdtempSync(join(tmpdir(), "anna-schedule-"))
  homes.push(home)
  return Layer.merge(Compose.agentRuntime({ runnerIdle: "1 hour", configPoll: "1 hour" }), SqliteJobStore.layer).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp)
  )
}

const say = (target: ChatTarget, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(target)
    return { chat, events: yield* Stream.runCollect(runtime.send(chat, text)) }
  })

const toolEnds = (events: ReadonlyArray<TurnEvent>) =>
  events.filter((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")

const HOUR = 3_600_000

describe("the scheduler tool, end to end", () => {
  it.effect("an agent schedules a morning summary; at 8:00 it runs and reaches the user on Telegram", () =>
    Effect.gen(function*() {
      yield* (yield* ProviderStore).add(localProvider(fake))
      yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["scheduler"] })
      // A fake Telegram behind the real notification dispatcher.
      const delivered = yield* Queue.unbounded<[string, ChannelTarget, OutboundMessage]>()
      const channels = Channels.of({
        status: Effect.succeed([{ id: "telegram", state: "running" }]),
        notify: (id, target, message) => Effect.asVoid(Queue.offer(delivered, [id, target, message]))
      })
      const notifier = yield* Notifier.make.pipe(Effect.provideService(Channels, channels))
      yield* Scheduler.make({ notifier, recheck: "1 hour" })

      fake.script(
        {
          kind: "reply",
          parts: [{
            type: "tool_call",
            id: "s1",
            name: "scheduler",
            input: { action: "add", cron: "0 8 * * *", tz: "UTC", prompt: "summarise my open tasks" }
          }]
        },
        { kind: "reply", parts: [{ type: "text", text: "Done: every morning at 8 I will send you your open tasks." }] }
      )
      const ann: ChatTarget = { platform: "telegram", externalUserId: "501", userName: "Ann" }
      const asked = yield* say(ann, "every morning at 8, summarise my open tasks and send them to me")
      const [end] = toolEnds(asked.events)
      assert.strictEqual(end?.isError, false, end?.output)
      assert.include(end?.output ?? "", "cron 0 8 * * * (UTC)")
      const store = yield* JobStore
      const [job] = yield* store.list({ userId: asked.chat.userId })
      assert.deepStrictEqual(
        [job?.agentId, job?.deliverUser, job?.createdBy, job?.prompt, job?.nextRunAt],
        ["a1", asked.chat.userId, "agent", "summarise my open tasks", 8 * HOUR]
      )

      fake.script({ kind: "reply", parts: [{ type: "text", text: "Open tasks: renew passport; call the plumber." }] })
      yield* TestClock.adjust(8 * HOUR - 1)
      assert.strictEqual(fake.requests.length, 2, "nothing runs before 8:00")
      yield* TestClock.adjust(1)
      const [channel, target, message] = yield* Queue.take(delivered)
      assert.deepStrictEqual([channel, target.userId, message.text], ["telegram", asked.chat.userId, "Open tasks: renew passport; call the plumber."])
      assert.include(JSON.stringify(fake.requests[2]?.body), "summarise my open tasks")

      // Another Telegram user's agent session sees none of Ann's jobs, and cannot remove them.
      fake.script(
        { kind: "reply", parts: [{ type: "tool_call", id: "s2", name: "scheduler", input: { action: "list" } }] },
        { kind: "reply", parts: [{ type: "tool_call", id: "s3", name: "scheduler", input: { action: "remove", id: job?.id ?? "" } }] },
        { kind: "reply", parts: [{ type: "text", text: "ok" }] }
      )
      const bob = yield* say({ platform: "telegram", externalUserId: "502", userName: "Bob" }, "what is scheduled?")
      const [listed, removed] = toolEnds(bob.events)
      assert.strictEqual(listed?.output, "You have no scheduled jobs.")
      assert.strictEqual(removed?.isError, true)
      assert.include(removed?.output ?? "", `you have no job "${job?.id ?? ""}"`)
      assert.strictEqual((yield* store.list()).length, 1)
    }).pipe(Effect.provide(stack())), { timeout: 60_000 })
})
