/**
 * The gateway's daily playbook sweep (issue 15): at start and then once a day, every agent's playbook
 * and the global one are swept (the real YamlPlaybook on files in a temp $ANNA_HOME, agents from the
 * real SQLite store), so a rule unused for long is demoted one level at a time as its decayed
 * confidence falls, without anyone running `anna playbook sweep`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue } from "effect"
import { TestClock } from "effect/testing"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { DAY_MS } from "../../../src/domain/learning/confidence.ts"
import type { PlaybookRule } from "../../../src/domain/learning/rule.ts"
import { parsePlaybook, stringifyPlaybook } from "../../../src/domain/learning/yaml.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { sweepAll, sweepLoop } from "../../../src/layers/learning/sweepDaily.ts"
import * as YamlPlaybook from "../../../src/layers/learning/YamlPlaybook.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { sqliteTemp } from "../../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const T0 = Date.UTC(2026, 0, 1)
const proven = (id: string): PlaybookRule => ({
  id,
  text: `Rule ${id}`,
  confidence: 0.9,
  maturity: "proven",
  successCount: 12,
  failureCount: 0,
  antiPattern: false,
  sourceEntries: [],
  tags: ["docker"],
  createdAt: T0,
  lastAppliedAt: T0
})

const stack = (home: string) =>
  YamlPlaybook.layer.pipe(
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(AppConfig.at(home)),
    Layer.provideMerge(sqliteTemp)
  )

const maturityIn = (path: string) => {
  const rules = parsePlaybook(readFileSync(path, "utf8"), path)
  return rules._tag === "Success" ? rules.success.map((r) => r.maturity) : []
}

describe("the daily playbook sweep", () => {
  it.effect("sweeps the global playbook and every agent's at start, then once a day", () => {
    const home = mkdtempSync(join(tmpdir(), "anna-sweep-"))
    homes.push(home)
    const agentFile = join(home, "workspaces", "a1", "playbook.yaml")
    const globalFile = join(home, "playbook.yaml")
    return Effect.gen(function*() {
      yield* (yield* AgentStore).create("a1", {})
      mkdirSync(join(home, "workspaces", "a1"), { recursive: true })
      writeFileSync(agentFile, stringifyPlaybook([proven("old")]))
      writeFileSync(globalFile, stringifyPlaybook([proven("shared")]))
      // 142 days unused: 0.9 × 0.5^(142/90) ≈ 0.301 — below 0.5 (proven → established), not yet below 0.3.
      yield* TestClock.setTime(T0 + 142 * DAY_MS)
      const swept = yield* Queue.unbounded<ReadonlyArray<string>>()
      const fiber = yield* Effect.forkChild(sweepLoop((lines) => Queue.offer(swept, lines).pipe(Effect.asVoid)))
      assert.deepStrictEqual(yield* Queue.take(swept), [
        "learning: swept the global playbook: 0 promoted, 1 demoted, 0 flagged",
        "learning: swept agent a1's playbook: 0 promoted, 1 demoted, 0 flagged"
      ])
      assert.deepStrictEqual(maturityIn(agentFile), ["established"])
      assert.deepStrictEqual(maturityIn(globalFile), ["established"])
      // A day later it is ≈ 0.298 < 0.3: the next daily sweep takes it one more level down.
      yield* TestClock.adjust("1 day")
      assert.lengthOf(yield* Queue.take(swept), 2)
      assert.deepStrictEqual(maturityIn(agentFile), ["nascent"])
      assert.deepStrictEqual(maturityIn(globalFile), ["nascent"])
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(stack(home)))
  })

  it.effect("a broken playbook is skipped (and left as it is), the others are still swept", () => {
    const home = mkdtempSync(join(tmpdir(), "anna-sweep-"))
    homes.push(home)
    const agentFile = join(home, "workspaces", "a1", "playbook.yaml")
    const globalFile = join(home, "playbook.yaml")
    return Effect.gen(function*() {
      yield* (yield* AgentStore).create("a1", {})
      mkdirSync(join(home, "workspaces", "a1"), { recursive: true })
      writeFileSync(agentFile, "rules:\n  - id: x\n    confidense: 2\n")
      writeFileSync(globalFile, stringifyPlaybook([proven("shared")]))
      yield* TestClock.setTime(T0 + 142 * DAY_MS)
      const notable = yield* sweepAll()
      assert.deepStrictEqual(notable, ["learning: swept the global playbook: 0 promoted, 1 demoted, 0 flagged"])
      assert.strictEqual(readFileSync(agentFile, "utf8"), "rules:\n  - id: x\n    confidense: 2\n")
      assert.deepStrictEqual(maturityIn(globalFile), ["established"])
    }).pipe(Effect.provide(stack(home)))
  })
})
