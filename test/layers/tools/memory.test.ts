import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { ToolCallContext } from "../../../src/domain/tool.ts"
import * as MemoryTool from "../../../src/layers/tools/memory.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { lcmTemp, simpleTemp } from "../../support/db.ts"
import { chat } from "../../support/memory.ts"

const alice: ToolCallContext = { sessionKey: "a1:cli:alice:main", userId: "alice", agentId: "a1" }
const bob: ToolCallContext = { sessionKey: "a1:cli:bob:main", userId: "bob", agentId: "a1" }

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)
const field = (u: unknown, key: string): unknown => (isRecord(u) ? u[key] : undefined)

const liveSummaryId = (sessionKey: string) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const c = yield* store.getConversation(sessionKey)
    const item = (yield* store.items(c.id)).find((it) => it.kind === "summary")
    assert.isDefined(item)
    return `sum_${item?.refId ?? 0}`
  })

/** Alice's session with a compacted start. */
const aliceCompacted = Effect.gen(function*() {
  const memory = yield* MemoryProvider
  const compactor = yield* Compactor
  yield* memory.append(sessionRefFromKey(alice.sessionKey), chat(40))
  const report = yield* compactor.compact(alice.sessionKey)
  assert.isTrue(report.compacted)
  return yield* liveSummaryId(alice.sessionKey)
})

describe("memory tool with LcmMemory", () => {
  it.effect("offers every action and its schema enum matches", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      assert.deepStrictEqual(tool.actions, ["status", "search", "describe", "expand", "profile_get", "profile_update"])
      assert.strictEqual(tool.definition.name, "memory")
      const schema = tool.definition.inputSchema
      assert.strictEqual(field(schema, "type"), "object")
      assert.deepStrictEqual(field(schema, "required"), ["action"])
      assert.strictEqual(field(schema, "additionalProperties"), false)
      const properties = field(schema, "properties")
      assert.deepStrictEqual(field(field(properties, "action"), "enum"), tool.actions)
      assert.deepStrictEqual(Object.keys(isRecord(properties) ? properties : {}).sort(), [
        "action",
        "content",
        "context",
        "cursor",
        "id",
        "include_memory_calls",
        "limit",
        "query",
        "strict"
      ])
      for (const a of tool.actions) assert.include(tool.definition.description, `- ${a}:`)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("status reports the conversation size, or that it is empty", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      assert.strictEqual(yield* tool.execute({ action: "status" }, alice), "This conversation has no stored messages yet.")
      yield* aliceCompacted
      const status = yield* tool.execute({ action: "status" }, alice)
      assert.match(status, /^40 messages \(\d+ tokens\) stored; live context \d+ tokens in 21 items; 1 summary, max depth 0\.$/)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("search finds the calling user's messages only", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const tool = yield* MemoryTool.make
      yield* memory.append(sessionRefFromKey(alice.sessionKey), [{ role: "user", content: "zebra alpha secret", createdAt: 1 }])
      yield* memory.append(sessionRefFromKey("a1:tg:alice:other"), [{ role: "user", content: "zebra in another chat", createdAt: 2 }])
      yield* memory.append(sessionRefFromKey(bob.sessionKey), [{ role: "user", content: "zebra bravo", createdAt: 3 }])
      const forBob = yield* tool.execute({ action: "search", query: "zebra" }, bob)
      assert.include(forBob, "«zebra» bravo")
      assert.notInclude(forBob, "secret")
      assert.notInclude(forBob, "another chat")
      assert.strictEqual(forBob.split("\n").length, 1)
      assert.match(forBob, /^msg_\d+ \[message, 1970-01-01 00:00\] /)
      const forAlice = yield* tool.execute({ action: "search", query: "zebra" }, alice)
      assert.include(forAlice, "secret")
      assert.include(forAlice, "another chat")
      assert.notInclude(forAlice, "bravo")
      // without a user, the search stays in the session
      const anonymous = yield* tool.execute({ action: "search", query: "zebra" }, { ...alice, userId: "" })
      assert.include(anonymous, "secret")
      assert.notInclude(anonymous, "another chat")
      const none = yield* tool.execute({ action: "search", query: "unicorn" }, alice)
      assert.strictEqual(none, `No matches for "unicorn".`)
      const limited = yield* tool.execute({ action: "search", query: "zebra", limit: 1 }, alice)
      assert.strictEqual(limited.split("\n").length, 1)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("describe and expand a summary of the caller's", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      const id = yield* aliceCompacted
      const d = yield* tool.execute({ action: "describe", id }, alice)
      assert.include(d, `${id}: leaf summary, depth 0`)
      assert.include(d, "covers messages 1–20 (20)")
      assert.include(d, "parents: none (in the live context)")
      assert.include(d, "constituents: 20 messages")
      const e = yield* tool.execute({ action: "expand", id }, alice)
      assert.include(e, "Message 0.")
      assert.include(e, "Message 19.")
      assert.notInclude(e, "Message 20.")
      assert.include(e, `(end of ${id}: 20 items)`)
      const firstPage = yield* tool.execute({ action: "expand", id, cursor: 19 }, alice)
      assert.include(firstPage, "Message 19.")
      assert.notInclude(firstPage, "Message 18.")
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("describe and expand refuse another user's summary", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      const id = yield* aliceCompacted
      const d = yield* tool.execute({ action: "describe", id }, bob).pipe(Effect.flip)
      assert.strictEqual(d._tag, "ToolError")
      assert.include(d.reason, `no summary "${id}"`)
      const e = yield* tool.execute({ action: "expand", id }, bob).pipe(Effect.flip)
      assert.include(e.reason, `no summary "${id}"`)
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("profile_get and profile_update act for the calling user and agent", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      assert.strictEqual(yield* tool.execute({ action: "profile_get" }, alice), "(no notes about this user yet)")
      assert.strictEqual(
        yield* tool.execute({ action: "profile_update", content: "Likes tea." }, alice),
        "Saved notes (10 characters)."
      )
      assert.strictEqual(yield* tool.execute({ action: "profile_get" }, alice), "Likes tea.")
      assert.strictEqual(yield* tool.execute({ action: "profile_get" }, bob), "(no notes about this user yet)")
      assert.strictEqual(yield* tool.execute({ action: "profile_get" }, { ...alice, agentId: "a2" }), "(no notes about this user yet)")
      const tooBig = yield* tool.execute({ action: "profile_update", content: "x".repeat(70_000) }, alice).pipe(Effect.flip)
      assert.strictEqual(tooBig._tag, "ToolError")
      assert.include(tooBig.reason, "KiB")
      const anonymous = yield* tool.execute({ action: "profile_update", content: "x" }, { ...alice, userId: "" }).pipe(
        Effect.flip
      )
      assert.include(anonymous.reason, "known user")
    }).pipe(Effect.provide(lcmTemp)))

  it.effect("unknown actions, missing arguments and invalid input are ToolErrors", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      const reason = (input: unknown) => Effect.map(Effect.flip(tool.execute(input, alice)), (e) => e.reason)
      assert.include(yield* reason({ action: "delete_everything" }), `unknown action "delete_everything"`)
      assert.include(yield* reason({ action: "search" }), "non-empty \"query\"")
      assert.include(yield* reason({ action: "search", query: "   " }), "non-empty \"query\"")
      assert.include(yield* reason({ action: "describe" }), "needs an \"id\"")
      assert.include(yield* reason({ action: "expand" }), "needs an \"id\"")
      assert.include(yield* reason({ action: "describe", id: "sum_424242" }), "no summary")
      assert.include(yield* reason({ action: "profile_update" }), "needs \"content\"")
      for (const bad of [null, "status", 42, [], {}, { action: 5 }, { action: "search", query: 7 }, { action: "expand", id: "sum_1", cursor: "x" }]) {
        const e = yield* Effect.flip(tool.execute(bad, alice))
        assert.strictEqual(e._tag, "ToolError")
        assert.strictEqual(e.tool, "memory")
        assert.include(e.reason, "invalid input")
      }
    }).pipe(Effect.provide(lcmTemp)))
})

describe("memory tool with SimpleMemory", () => {
  it.effect("offers only status and profile actions, with no query or id properties", () =>
    Effect.gen(function*() {
      const tool = yield* MemoryTool.make
      assert.deepStrictEqual(tool.actions, ["status", "profile_get", "profile_update"])
      const properties = field(tool.definition.inputSchema, "properties")
      assert.deepStrictEqual(field(field(properties, "action"), "enum"), ["status", "profile_get", "profile_update"])
      assert.deepStrictEqual(Object.keys(isRecord(properties) ? properties : {}).sort(), ["action", "content"])
      assert.notInclude(tool.definition.description, "- search:")
      assert.notInclude(tool.definition.description, "- expand:")
    }).pipe(Effect.provide(simpleTemp)))

  it.effect("dispatches its actions and refuses the others", () =>
    Effect.gen(function*() {
      const memory = yield* MemoryProvider
      const tool = yield* MemoryTool.make
      yield* memory.append(sessionRefFromKey(alice.sessionKey), chat(4))
      assert.match(yield* tool.execute({ action: "status" }, alice), /^4 messages .* no summaries yet\.$/)
      yield* tool.execute({ action: "profile_update", content: "n" }, alice)
      assert.strictEqual(yield* tool.execute({ action: "profile_get" }, alice), "n")
      for (const action of ["search", "describe", "expand"]) {
        const e = yield* tool.execute({ action, query: "x", id: "sum_1" }, alice).pipe(Effect.flip)
        assert.include(e.reason, `unknown action "${action}"; available: status, profile_get, profile_update`)
      }
    }).pipe(Effect.provide(simpleTemp)))
})
