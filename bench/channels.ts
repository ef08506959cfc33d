/**
 * A chat platform end to end with an instant model: the Telegram channel (grammy over HTTP to the
 * fake Bot API on 127.0.0.1) on the real runtime (SQLite, LCM memory, the openai SDK to the fake LLM
 * answering at once). 1,000 messages from 50 chats arrive at once; measured: messages answered per
 * second (each claimed in the ledger, routed, a turn run, the reply rendered, sent and recorded),
 * against the same 1,000 turns sent to the runtime directly (the floor: what the channel adds is the
 * platform's HTTP calls, the claims and the rendering), and the latency of one message in a quiet
 * chat.
 */
import { Effect, Layer, Scope, Exit, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { join } from "node:path"
import * as SqliteChannelLedger from "../src/layers/channels/SqliteChannelLedger.ts"
import * as TelegramChannel from "../src/layers/channels/TelegramChannel.ts"
import { Channel } from "../src/services/Channel.ts"
import { Runtime } from "../src/services/Runtime.ts"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { startFakeTelegram } from "../test/support/fakeTelegram/server.ts"
import { configureAgent, runtimeStack } from "../test/support/runtimeStack.ts"
import { ratios } from "./support/common.ts"
import { int, ms, progress, rate, ratio, section, summarize, table } from "./support/measure.ts"

const TOKEN = "424242:BenchTokenBenchTokenBenchToken00"
const CHATS = 50
const MESSAGES = 1_000

export const runChannels = async (dir: string) => {
  const llm = await startFakeLlm()
  llm.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "Sure: **done**, see `notes.md`." }] }))
  const tg = await startFakeTelegram({ token: TOKEN, botUsername: "bench_bot" })
  const rows: Array<Array<string>> = []
  const answered = () => {
    let n = 0
    for (let c = 1; c <= CHATS; c++) n += tg.messages(c).length
    return n
  }
  try {
    const home = mkdtempSync(join(dir, "channels-"))
    await Effect.runPromise(Effect.gen(function*() {
      yield* configureAgent(llm, "default", { tools: [] })
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(
        Layer.effect(Channel, TelegramChannel.make({ token: TOKEN, baseUrl: tg.apiRoot, groupMode: "mention", allowedUsers: undefined })),
        scope
      )
      // Warm-up: every chat known to the fake, every user created, every session's first turn.
      for (let c = 1; c <= CHATS; c++) tg.sendUserMessage({ chatId: c, chatType: "private", from: { id: c }, text: "hello" })
      yield* Effect.promise(() => tg.waitFor(() => answered() === CHATS, "the warm-up answered", 120_000))

      progress(`channels: one message at a time in a quiet chat (100)`)
      const quiet: Array<number> = []
      for (let i = 0; i < 100; i++) {
        const before = tg.messages(1).length
        const t = performance.now()
        tg.sendUserMessage({ chatId: 1, chatType: "private", from: { id: 1 }, text: `quiet ${i}` })
        yield* Effect.promise(() => tg.waitFor(() => tg.messages(1).length > before, "the answer", 30_000))
        quiet.push(performance.now() - t)
      }
      const q = summarize(quiet)
      rows.push(["one message, quiet chat (100)", `${ms(q.p50)} / ${ms(q.p95)}`, "", "long-poll wake-up, claim, turn, sendMessage, ledger"])

      progress(`channels: ${int(MESSAGES)} messages from ${CHATS} chats at once`)
      const start = answered()
      const t0 = performance.now()
      for (let i = 0; i < MESSAGES; i++) {
        const chat = 1 + (i % CHATS)
        tg.sendUserMessage({ chatId: chat, chatType: "private", from: { id: chat }, text: `burst ${i}` })
      }
      yield* Effect.promise(() => tg.waitFor(() => answered() - start >= MESSAGES, "the burst answered", 600_000))
      const channelMs = performance.now() - t0
      yield* Scope.close(scope, Exit.void)

      // Floor: the same turns straight into the runtime, as many sessions and as parallel.
      const runtime = yield* Runtime
      const chats = yield* Effect.forEach(Array.from({ length: CHATS }, (_, i) => i), (i) => runtime.resolve({ platform: "floor", externalUserId: `f${i}` }))
      yield* Effect.forEach(chats, (c) => Stream.runDrain(runtime.send(c, "warm")), { concurrency: CHATS, discard: true })
      const t1 = performance.now()
      yield* Effect.forEach(
        chats,
        (c) => Effect.forEach(Array.from({ length: MESSAGES / CHATS }, (_, n) => n), (n) => Stream.runDrain(runtime.send(c, `burst ${n}`)), { discard: true }),
        { concurrency: CHATS, discard: true }
      )
      const runtimeMs = performance.now() - t1
      const ours = MESSAGES / (channelMs / 1000)
      const floor = MESSAGES / (runtimeMs / 1000)
      rows.push([
        `${int(MESSAGES)} messages, ${CHATS} chats at once`,
        `${rate(ours)} msg/s`,
        `${rate(floor)} turns/s`,
        `${int(MESSAGES)} answered in ${ms(channelMs)} ms; ${ms(channelMs / MESSAGES - runtimeMs / MESSAGES)} ms more per message`
      ])
      ratios.push({ operation: `Telegram channel, ${int(MESSAGES)} messages from ${CHATS} chats`, ours: `${ms(channelMs)} ms`, floor: `${ms(runtimeMs)} ms`, ratio: ratio(channelMs, runtimeMs) })
    }).pipe(Effect.scoped, Effect.provide(SqliteChannelLedger.layer.pipe(Layer.provideMerge(runtimeStack(home))))))
  } finally {
    await tg.close()
    await llm.close()
  }
  section(
    "Chat platform end to end (Telegram channel, instant model)",
    table(["measure", "ours (p50 / p95)", "floor: the runtime alone", "note"], rows),
    "Every message goes through the fake Bot API over HTTP: getUpdates, the ledger's claim and cursor, the turn, sendChatAction, sendMessage (HTML), the ledger's reply record. The floor sends the same turns to the runtime directly."
  )
}
