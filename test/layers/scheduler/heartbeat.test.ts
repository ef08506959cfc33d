/**
 * The heartbeat over a scripted runtime (no model, no sandbox): which workspaces get a beat (a
 * regular HEARTBEAT.md only — a symlink planted in its place is ignored), that HEARTBEAT_OK reaches
 * nobody, that anything else reaches the workspace's user, and that `off` stops it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { ChatTarget, ResolvedChat, TurnEvent } from "../../../src/domain/runtime/types.ts"
import * as CachedLiveConfig from "../../../src/layers/config/CachedLiveConfig.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as Scheduler from "../../../src/layers/scheduler/Scheduler.ts"
import * as SqliteJobStore from "../../../src/layers/scheduler/SqliteJobStore.ts"
import { HEARTBEAT_PROMPT, heartbeatJobId, isQuiet } from "../../../src/layers/scheduler/heartbeat.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { JobStore } from "../../../src/services/JobStore.ts"
import { Notifier } from "../../../src/services/Notifier.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { sqliteTemp, tempDir } from "../../support/db.ts"
import { done } from "../../support/fakeRuntime.ts"
import { eventually } from "../../support/eventually.ts"

const MIN = 60_000

const scripted = (answers: Array<string>) => {
  const targets: Array<ChatTarget> = []
  const prompts: Array<string> = []
  const resolve = (target: ChatTarget) =>
    Effect.sync(() => {
      targets.push(target)
      const chat: ResolvedChat = {
        userId: target.userId ?? "", userName: "", agentId: target.agentId ?? "", platform: target.platform, chatId: target.chatId ?? "dm",
        isGroup: false, context: target.chatId ?? "dm", sessionKey: "", model: ""
      }
      return chat
    })
  const send = (_chat: ResolvedChat, message: unknown) =>
    Stream.suspend(() => {
      prompts.push(String(message))
      const events: ReadonlyArray<TurnEvent> = [{ type: "text", text: answers.shift() ?? "HEARTBEAT_OK" }, done("end_turn")]
      return Stream.fromIterable(events)
    })
  return { targets, prompts, service: Runtime.of({ resolve, send, abort: () => Effect.succeed(false) }) }
}

const sent: Array<[string, string]> = []
const notifier = Notifier.of({
  notify: (user, message) =>
    Effect.sync(() => {
      sent.push([user, message.text ?? ""])
      return "telegram"
    }),
  channels: Effect.succeed(["telegram"])
})

const stack = (home: string) =>
  Layer.mergeAll(SqliteJobStore.layer, CachedLiveConfig.layer({ pollInterval: "1 hour" })).pipe(
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(AppConfig.at(home)),
    Layer.provideMerge(sqliteTemp)
  )

describe("heartbeat", () => {
  it("knows a quiet answer", () => {
    expect([isQuiet("HEARTBEAT_OK"), isQuiet(" **HEARTBEAT_OK**\n"), isQuiet(""), isQuiet("HEARTBEAT_OK, but the server is down")]).toEqual([
      true, true, true, false
    ])
  })

  it.effect("beats for each user workspace with a regular HEARTBEAT.md; quiet answers reach nobody", () => {
    const home = tempDir("anna-heartbeat-")
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add({
        id: "local", type: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "x", models: [], defaultModel: "m", headers: {}, enabled: true
      })
      yield* (yield* AgentStore).create("a1", { providerId: "local" })
      yield* (yield* AgentStore).create("shared1", { providerId: "local", sandboxWorkspace: "shared" })
      for (const u of ["alice", "bob", "carol"]) yield* (yield* ConfigStore).createUser(u, u)
      const users = join(home, "workspaces", "a1", "users")
      for (const u of ["alice", "bob", "carol", "gone"]) mkdirSync(join(users, u), { recursive: true })
      writeFileSync(join(users, "alice", "HEARTBEAT.md"), "- remind me to water the plants on Fridays\n")
      // A user removed since: their workspace stays, and gets no beat.
      writeFileSync(join(users, "gone", "HEARTBEAT.md"), "- old\n")
      // carol planted a link to a file outside her workspace: never followed, no beat.
      writeFileSync(join(home, "secret.md"), "secret")
      symlinkSync(join(home, "secret.md"), join(users, "carol", "HEARTBEAT.md"))
      mkdirSync(join(home, "workspaces", "shared1", "shared"), { recursive: true })
      writeFileSync(join(home, "workspaces", "shared1", "shared", "HEARTBEAT.md"), "shared")

      const rt = scripted(["HEARTBEAT_OK", "It is Friday: water the plants."])
      const store = yield* JobStore
      yield* Layer.build(Scheduler.layer({ notifier, recheck: "1 hour" }).pipe(Layer.provide(Layer.succeed(Runtime, rt.service))))
      const alice = heartbeatJobId("a1", "alice")
      yield* TestClock.adjust(30 * MIN)
      yield* eventually(Effect.map(store.history(alice), (runs) => expect(runs.map((r) => r.status)).toEqual(["ok"])))
      expect(rt.targets).toEqual([{ platform: "scheduler", externalUserId: "alice", userId: "alice", agentId: "a1", chatId: "heartbeat" }])
      expect(rt.prompts).toEqual([HEARTBEAT_PROMPT])
      expect(sent).toEqual([])
      yield* TestClock.adjust(30 * MIN)
      yield* eventually(Effect.map(store.history(alice), (runs) => expect(runs.map((r) => r.status)).toEqual(["ok", "ok"])))
      expect(sent).toEqual([["alice", "It is Friday: water the plants."]])
      const runs = yield* store.history(alice)
      expect(runs.map((r) => [r.trigger, r.status, r.reply, r.deliveredTo])).toEqual([
        ["heartbeat", "ok", "It is Friday: water the plants.", "alice@telegram"],
        ["heartbeat", "ok", "HEARTBEAT_OK", null]
      ])

      yield* (yield* ConfigStore).setSetting("scheduler.heartbeat_interval", "off")
      yield* TestClock.adjust(2 * 60 * MIN)
      expect(rt.prompts).toHaveLength(2)
    }).pipe(Effect.provide(stack(home)), Effect.ensuring(Effect.sync(() => rmSync(home, { recursive: true, force: true }))))
  })

  it.effect("two gateways on one database give a workspace one beat per interval between them", () => {
    const home = tempDir("anna-heartbeat-two-")
    return Effect.gen(function*() {
      yield* (yield* ProviderStore).add({
        id: "local", type: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "x", models: [], defaultModel: "m", headers: {}, enabled: true
      })
      yield* (yield* AgentStore).create("a1", { providerId: "local" })
      yield* (yield* ConfigStore).createUser("alice", "alice")
      const users = join(home, "workspaces", "a1", "users")
      mkdirSync(join(users, "alice"), { recursive: true })
      writeFileSync(join(users, "alice", "HEARTBEAT.md"), "- check the backups\n")
      const one = scripted([])
      const two = scripted([])
      const store = yield* JobStore
      for (const rt of [one, two]) yield* Layer.build(Scheduler.layer({ notifier, recheck: "1 hour" }).pipe(Layer.provide(Layer.succeed(Runtime, rt.service))))
      const alice = heartbeatJobId("a1", "alice")
      for (let n = 1; n <= 3; n++) {
        yield* TestClock.adjust(30 * MIN)
        yield* eventually(Effect.map(store.history(alice), (runs) => expect(runs).toHaveLength(n)))
      }
      expect(one.prompts.length + two.prompts.length).toBe(3)
    }).pipe(Effect.provide(stack(home)), Effect.ensuring(Effect.sync(() => rmSync(home, { recursive: true, force: true }))))
  })
})
