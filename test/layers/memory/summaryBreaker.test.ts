/**
 * The summary provider's circuit breaker as a state machine: when it lets a call through, probes,
 * or skips; how long it stays open (60 s doubling to 10 min, a longer retry-after wins); what
 * closes it. The layer's behaviour end to end is in ModelSummarizer.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  type Admission,
  admit,
  FIRST_COOLDOWN_MS,
  MAX_COOLDOWN_MS,
  type Open,
  type Outcome,
  settle
} from "../../../src/layers/memory/summaryBreaker.ts"

const outage: Outcome = { _tag: "Outage", reason: "provider p failed (HTTP 500): down" }
const call: Admission = { _tag: "Call" }
const probe: Admission = { _tag: "Probe" }

describe("summary breaker", () => {
  it("closed: every call goes through; an outage opens it for 60 s", () => {
    assert.deepStrictEqual(admit(undefined, 0), [call, undefined])
    assert.deepStrictEqual(settle(undefined, call, { _tag: "Answered" }, 0), ["none", undefined])
    assert.deepStrictEqual(settle(undefined, call, { _tag: "Unknown" }, 0), ["none", undefined])
    const [t, open] = settle(undefined, call, outage, 1_000)
    assert.strictEqual(t, "opened")
    assert.deepStrictEqual(open, { until: 61_000, cooldownMs: FIRST_COOLDOWN_MS, reason: outage._tag === "Outage" ? outage.reason : "", probing: false })
  })

  it("open: skips until the cooldown has passed, then lets one probe through at a time", () => {
    const open: Open = { until: 60_000, cooldownMs: 60_000, reason: "down", probing: false }
    assert.strictEqual(admit(open, 59_999)[0]._tag, "Skip")
    const [first, probing] = admit(open, 60_000)
    assert.deepStrictEqual(first, probe)
    assert.isTrue(probing?.probing)
    assert.strictEqual(admit(probing, 60_001)[0]._tag, "Skip", "a second summary meanwhile stays deterministic")
    // A probe that says nothing (interrupted, spend guard) frees the next one.
    const [t, freed] = settle(probing, probe, { _tag: "Unknown" }, 60_002)
    assert.deepStrictEqual([t, freed?.probing, freed?.until], ["none", false, 60_000])
    assert.deepStrictEqual(admit(freed, 60_003)[0], probe)
  })

  it("a failed probe doubles the cooldown, up to 10 minutes; an answer closes it", () => {
    let open: Open | undefined = settle(undefined, call, outage, 0)[1]
    const cooldowns: Array<number> = []
    for (let i = 0; i < 6; i++) {
      const now: number = open?.until ?? 0
      const [admission, probing] = admit(open, now)
      assert.deepStrictEqual(admission, probe)
      const [t, next] = settle(probing, admission, outage, now)
      assert.strictEqual(t, "reopened")
      cooldowns.push((next?.until ?? 0) - now)
      open = next
    }
    assert.deepStrictEqual(cooldowns, [120_000, 240_000, 480_000, MAX_COOLDOWN_MS, MAX_COOLDOWN_MS, MAX_COOLDOWN_MS])
    const now = open?.until ?? 0
    const [, probing] = admit(open, now)
    assert.deepStrictEqual(settle(probing, probe, { _tag: "Answered" }, now), ["closed", undefined])
  })

  it("a rate limit's retry-after longer than the cooldown wins, without changing the doubling", () => {
    const limited: Outcome = { _tag: "Outage", reason: "rate limited", retryAfterMs: 300_000 }
    const [, open] = settle(undefined, call, limited, 0)
    assert.deepStrictEqual([open?.until, open?.cooldownMs], [300_000, 60_000])
    const [, probing] = admit(open, 300_000)
    const [, again] = settle(probing, probe, outage, 300_000)
    assert.deepStrictEqual([again?.until, again?.cooldownMs], [420_000, 120_000])
    // A short retry-after does not shorten the cooldown.
    const [, short] = settle(undefined, call, { ...limited, retryAfterMs: 1_000 }, 0)
    assert.strictEqual(short?.until, 60_000)
  })

  it("a call let through before the breaker opened and failing after it changes nothing but a longer retry-after", () => {
    const [, open] = settle(undefined, call, outage, 0)
    assert.deepStrictEqual(settle(open, call, outage, 5_000), ["none", open])
    const [t, longer] = settle(open, call, { _tag: "Outage", reason: "rate limited", retryAfterMs: 120_000 }, 5_000)
    assert.deepStrictEqual([t, longer?.until, longer?.cooldownMs], ["none", 125_000, 60_000])
    // Its answer is an answer: the provider is up.
    assert.deepStrictEqual(settle(open, call, { _tag: "Answered" }, 5_000), ["closed", undefined])
  })
})
