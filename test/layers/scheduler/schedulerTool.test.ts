/**
 * The `scheduler` tool's rules against a hostile chat user: jobs belong to the caller and deliver to
 * the caller only, at most MAX_TOOL_JOBS per user and agent, `every` at least a minute, bounded
 * prompts, and only the caller's own jobs are listed, shown or removed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { MAX_PROMPT_CHARS, MAX_TOOL_JOBS } from "../../../src/domain/scheduler/types.ts"
import * as SqliteJobStore from "../../../src/layers/scheduler/SqliteJobStore.ts"
import { schedulerTool } from "../../../src/layers/tools/scheduler.ts"
import { JobStore } from "../../../src/services/JobStore.ts"
import { sqliteTemp } from "../../support/db.ts"

const ann = { sessionKey: "a1:telegram:ann:dm", userId: "ann", agentId: "a1" }
const bob = { sessionKey: "a1:telegram:bob:dm", userId: "bob", agentId: "a1" }

describe("scheduler tool", () => {
  it.effect("adds jobs for the caller only, within the limits", () =>
    Effect.gen(function*() {
      const store = yield* JobStore
      const tool = schedulerTool(store)
      const reason = (input: unknown, ctx = ann) => Effect.map(Effect.flip(tool.execute(input, ctx)), (e) => e.reason)

      const out = yield* tool.execute({ action: "add", every: "1h", prompt: "stretch", userId: "bob", deliver_user: "bob" }, ann)
      assert.include(out, "Scheduled job-")
      const [job] = yield* store.list()
      assert.deepStrictEqual([job?.userId, job?.agentId, job?.deliverUser, job?.createdBy], ["ann", "a1", "ann", "agent"])

      assert.include(yield* reason({ action: "add", every: "30s", prompt: "spam" }), "every must be at least 1m")
      assert.include(yield* reason({ action: "add", every: "1h", prompt: "x".repeat(MAX_PROMPT_CHARS + 1) }), `longer than ${MAX_PROMPT_CHARS}`)
      assert.include(yield* reason({ action: "add", cron: "* * * * *", every: "1h", prompt: "x" }), "give exactly one of cron, every or at")
      assert.include(yield* reason({ action: "add", cron: "0 8 * * *" }), "give the prompt")
      assert.include(yield* reason({ action: "launch" }), "invalid input")

      for (let i = 1; i < MAX_TOOL_JOBS; i++) yield* tool.execute({ action: "add", every: "1d", prompt: `job ${i}` }, ann)
      assert.include(yield* reason({ action: "add", every: "1d", prompt: "one too many" }), `already have ${MAX_TOOL_JOBS} jobs`)
      // Bob's own quota is his.
      assert.include(yield* tool.execute({ action: "add", every: "1d", prompt: "bob's", deliver: false }, bob), "stored only")

      // Bob sees and touches only his own.
      const bobs = yield* tool.execute({ action: "list" }, bob)
      assert.strictEqual(bobs.split("\n").length, 1)
      assert.include(yield* reason({ action: "remove", id: job?.id }, bob), "you have no job")
      assert.include(yield* reason({ action: "history", id: job?.id }, bob), "you have no job")
      assert.strictEqual(yield* tool.execute({ action: "history", id: job?.id }, ann), `${job?.id ?? ""} has not run yet.`)
      assert.strictEqual(yield* tool.execute({ action: "remove", id: job?.id }, ann), `Removed ${job?.id ?? ""}.`)
      assert.strictEqual((yield* store.list({ userId: "ann" })).length, MAX_TOOL_JOBS - 1)
    }).pipe(Effect.provide(SqliteJobStore.layer.pipe(Layer.provideMerge(sqliteTemp)))))

  it.effect("40 adds at once (one model answer's parallel tool calls) stop at the limit: the check and the insert are one step", () =>
    Effect.gen(function*() {
      const store = yield* JobStore
      const tool = schedulerTool(store)
      const results = yield* Effect.forEach(
        Array.from({ length: 40 }, (_, i) => i),
        (i) => Effect.result(tool.execute({ action: "add", every: "1d", prompt: `job ${i}` }, ann)),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter((r) => r._tag === "Success").length, MAX_TOOL_JOBS)
      assert.strictEqual((yield* store.list({ userId: "ann", agentId: "a1" })).length, MAX_TOOL_JOBS)
    }).pipe(Effect.provide(SqliteJobStore.layer.pipe(Layer.provideMerge(sqliteTemp)))))
})
