/**
 * The chat platforms' shared part, above its contracts: the keyed locks (one holder per key at a
 * time, whatever the interleaving, and no lock left behind), command detection, and the reply writer
 * over recorded platform operations (throttled streaming edits on the TestClock, the plain fallback
 * of a part the platform refuses, resumed replies written into the same messages without sending a
 * part twice, notices after the answer, a picker attached to the first message).
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { PlatformCallError } from "../../../src/layers/channels/shared/calls.ts"
import { isCommand, makeKeyedLocks } from "../../../src/layers/channels/shared/inbound.ts"
import { makeReplyWriter, type ReplyOps } from "../../../src/layers/channels/shared/reply.ts"
import { RESTARTED } from "../../../src/domain/runtime/restart.ts"

const Jobs = Schema.Array(Schema.Struct({
  key: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 })),
  yields: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4 }))
})).check(Schema.isMaxLength(40))

describe("keyed locks", () => {
  it.prop("never two holders of one key at once; every lock dropped when all are done", { jobs: Arbitrary.schema(Jobs) }, ({ jobs }) =>
    Effect.gen(function*() {
      const locks = makeKeyedLocks()
      const holding = new Map<number, number>()
      let overlaps = 0
      let concurrentKeys = 0
      const job = (key: number, yields: number) =>
        locks.withLock(
          String(key),
          Effect.gen(function*() {
            const now = (holding.get(key) ?? 0) + 1
            holding.set(key, now)
            if (now > 1) overlaps++
            concurrentKeys = Math.max(concurrentKeys, [...holding.values()].filter((n) => n > 0).length)
            for (let i = 0; i < yields; i++) yield* Effect.yieldNow
            holding.set(key, (holding.get(key) ?? 1) - 1)
          })
        )
      const fibers = yield* Effect.forEach(jobs, (j) => Effect.forkChild(job(j.key, j.yields)))
      yield* Fiber.joinAll(fibers)
      assert.strictEqual(overlaps, 0)
      assert.strictEqual(locks.size(), 0)
      // Different keys do run side by side when the jobs allow it.
      if (new Set(jobs.filter((j) => j.yields > 0).map((j) => j.key)).size > 1) assert.isAtLeast(concurrentKeys, 1)
    }))
})

describe("isCommand", () => {
  it("a slash word at the start, alone or with arguments; not a path or a word with a slash", () => {
    assert.isTrue(isCommand("/new"))
    assert.isTrue(isCommand("  /model 2"))
    assert.isTrue(isCommand([{ type: "text", text: "/help" }]))
    assert.isFalse(isCommand("/usr/bin/env"))
    assert.isFalse(isCommand("and/or"))
    assert.isFalse(isCommand("hello /new"))
  })
})

interface Op {
  readonly op: "send" | "edit" | "choices"
  readonly id: string
  readonly text: string
  readonly rich: boolean
}

/** Platform operations recorded; `refuseRich` makes every rich write fail as badly formatted. */
const recorder = (over: Partial<ReplyOps> & { readonly refuseRich?: boolean; readonly canEdit?: boolean } = {}) => {
  const ops: Array<Op> = []
  const told: Array<ReadonlyArray<string>> = []
  let next = 1
  const formatError = new PlatformCallError({ platform: "p", method: "send", kind: "format", status: 400, description: "bad markup", retryAfterMs: undefined })
  const options: ReplyOps = {
    platform: "p",
    limit: 50,
    parts: (md) => md.split("\n\n").map((p) => ({ rich: `<b>${p}</b>`, plain: p })),
    send: (text, rich) =>
      over.refuseRich === true && rich ? Effect.fail(formatError) : Effect.sync(() => {
        const id = String(next++)
        ops.push({ op: "send", id, text, rich })
        return id
      }),
    edit: over.canEdit === false ? undefined : (id, text, rich) =>
      over.refuseRich === true && rich ? Effect.fail(formatError) : Effect.sync(() => void ops.push({ op: "edit", id, text, rich })),
    choices: (id, c) => Effect.sync(() => void ops.push({ op: "choices", id, text: c.options.map((o) => o.value).join(","), rich: false })),
    editIntervalMs: 1_000,
    previewLimit: 1_000,
    existing: [],
    onMessages: (ids) => Effect.sync(() => void told.push(ids)),
    ...over
  }
  return { ops, told, options }
}

describe("reply writer", () => {
  it.effect("streams by edits at most once per interval, then writes the rendered parts and the notices", () =>
    Effect.gen(function*() {
      const r = recorder()
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "Hel" })
      yield* w.event({ type: "text", text: "lo" })
      yield* TestClock.adjust("1 second")
      yield* w.event({ type: "text", text: " there\n\nSecond" })
      yield* w.event({ type: "tool_start", id: "t", name: "bash", input: {} })
      yield* w.event({ type: "notice", text: "compacted" })
      yield* w.finish
      assert.deepStrictEqual(r.ops.map((o) => [o.op, o.id, o.text]), [
        ["send", "1", "Hel"],
        ["edit", "1", "Hello there\n\nSecond"],
        ["edit", "1", "<b>Hello there</b>"],
        ["send", "2", "<b>Second</b>"],
        ["send", "3", "[compacted]"]
      ])
      assert.deepStrictEqual(r.told, [["1"], ["1", "2"], ["1", "2", "3"]])
    }))

  it.effect("a part the platform refuses as badly formatted is written as its plain text", () =>
    Effect.gen(function*() {
      const r = recorder({ refuseRich: true, canEdit: false })
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "one\n\ntwo" })
      yield* w.finish
      assert.deepStrictEqual(r.ops.map((o) => [o.op, o.text, o.rich]), [["send", "one", false], ["send", "two", false]])
    }))

  it.effect("resumed without edits: the parts already sent are not sent again", () =>
    Effect.gen(function*() {
      const r = recorder({ canEdit: false, existing: ["41"] })
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "one\n\ntwo\n\nthree" })
      yield* w.finish
      assert.deepStrictEqual(r.ops.map((o) => [o.op, o.text]), [["send", "<b>two</b>"], ["send", "<b>three</b>"]])
      assert.deepStrictEqual(r.told.at(-1), ["41", "1", "2"])
    }))

  it.effect("resumed with edits: the first message is rewritten in place", () =>
    Effect.gen(function*() {
      const r = recorder({ existing: ["41"] })
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "all of it" })
      yield* w.finish
      assert.deepStrictEqual(r.ops.map((o) => [o.op, o.id, o.text]), [["edit", "41", "all of it"], ["edit", "41", "<b>all of it</b>"]])
    }))

  it.effect("a turn that starts over (restart) rewrites the streamed message: the old attempt's words never stay", () =>
    Effect.gen(function*() {
      const r = recorder({})
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "Old half" })
      yield* w.event({ type: "notice", text: "old notice" })
      yield* w.event({ type: "restart" })
      yield* TestClock.adjust("2 seconds")
      yield* w.event({ type: "text", text: "New answer" })
      yield* w.finish
      assert.deepStrictEqual(r.ops.map((o) => [o.op, o.id, o.text]), [
        ["send", "1", "Old half"],
        ["edit", "1", `[${RESTARTED}]`],
        ["edit", "1", "New answer"],
        ["edit", "1", "<b>New answer</b>"]
      ])
    }))

  it.effect("without edits a restart only drops what was gathered: the one reply is the new attempt's", () =>
    Effect.gen(function*() {
      const r = recorder({ canEdit: false })
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "Old half" })
      yield* w.event({ type: "restart" })
      yield* w.event({ type: "text", text: "New" })
      yield* w.finish
      assert.deepStrictEqual(r.ops.map((o) => [o.op, o.text]), [["send", "<b>New</b>"]])
    }))

  it.effect("a command's picker is attached to its first message; nothing at all is '[no answer]'", () =>
    Effect.gen(function*() {
      const r = recorder({ canEdit: false })
      const w = yield* makeReplyWriter(r.options)
      yield* w.event({ type: "text", text: "Models:\n1. a\n2. b" })
      yield* w.event({ type: "choices", choices: { command: "model", options: [{ value: "a", label: "a", current: true }, { value: "b", label: "b", current: false }] } })
      yield* w.finish
      assert.deepStrictEqual(r.ops.at(-1), { op: "choices", id: "1", text: "a,b", rich: false })
      const empty = recorder()
      const e = yield* makeReplyWriter(empty.options)
      yield* e.finish
      assert.deepStrictEqual(empty.ops.map((o) => o.text), ["[no answer]"])
    }))
})
