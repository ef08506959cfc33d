import { describe, expect, it } from "@effect/vitest"
import { checkZone, nextAfter, parseAt, parseCron, parseDeliver, parseEvery } from "../../../src/domain/scheduler/schedule.ts"

const t = (iso: string) => Date.parse(iso)
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const cron = (spec: string, tz: string | null = null) => ({ kind: "cron" as const, spec, tz })

describe("cron", () => {
  it("runs at the end of each month and skips months without the day", () => {
    const job = cron("30 23 31 * *")
    expect(iso(nextAfter(job, t("2026-01-31T23:30:00Z")))).toBe("2026-03-31T23:30:00.000Z")
    expect(iso(nextAfter(job, t("2026-03-31T23:29:59Z")))).toBe("2026-03-31T23:30:00.000Z")
  })

  it("is strictly after: a job due now is next due at its following time", () => {
    expect(iso(nextAfter(cron("0 8 * * *"), t("2026-05-01T08:00:00Z")))).toBe("2026-05-02T08:00:00.000Z")
  })

  it("finds Feb 29 only in leap years", () => {
    expect(iso(nextAfter(cron("0 12 29 2 *"), t("2026-03-01T00:00:00Z")))).toBe("2028-02-29T12:00:00.000Z")
  })

  it("keeps 8:00 in Europe/Berlin across both DST changes", () => {
    const job = cron("0 8 * * *", "Europe/Berlin")
    // Before the spring change: CET (UTC+1); after: CEST (UTC+2).
    expect(iso(nextAfter(job, t("2026-03-28T07:00:00Z")))).toBe("2026-03-29T06:00:00.000Z")
    expect(iso(nextAfter(job, t("2026-03-28T06:00:00Z")))).toBe("2026-03-28T07:00:00.000Z")
    // Autumn: back to CET.
    expect(iso(nextAfter(job, t("2026-10-24T06:00:00Z")))).toBe("2026-10-25T07:00:00.000Z")
  })

  it("runs a time the spring change skips right after the gap, and a repeated autumn time once", () => {
    const job = cron("30 2 * * *", "Europe/Berlin")
    // 2026-03-29 02:30 does not exist in Berlin: the run comes at 03:30 CEST (01:30Z).
    expect(iso(nextAfter(job, t("2026-03-28T12:00:00Z")))).toBe("2026-03-29T01:30:00.000Z")
    // 2026-10-25 02:30 happens twice: the run is the first (00:30Z), the next one is the next day.
    const first = nextAfter(job, t("2026-10-24T12:00:00Z"))
    expect(iso(first)).toBe("2026-10-25T00:30:00.000Z")
    expect(iso(nextAfter(job, first ?? 0))).toBe("2026-10-26T01:30:00.000Z")
  })

  it("refuses 6 fields, bad fields and unknown zones with the reason", () => {
    expect(parseCron("0 0 8 * * *", null)).toEqual({ problem: expect.stringContaining("has 6 field(s); use 5") })
    expect(parseCron("61 8 * * *", null)).toEqual({ problem: expect.stringContaining("bad cron \"61 8 * * *\"") })
    expect(parseCron("0 8 * * *", "Mars/Olympus")).toEqual({ problem: expect.stringContaining("unknown time zone \"Mars/Olympus\"") })
    expect(checkZone("Europe/Berlin")).toEqual({ ok: "Europe/Berlin" })
  })
})

describe("every", () => {
  it("parses durations and refuses others", () => {
    expect(parseEvery("2s")).toEqual({ ok: 2_000 })
    expect(parseEvery("1h30m")).toEqual({ ok: 5_400_000 })
    expect(parseEvery("1d")).toEqual({ ok: 86_400_000 })
    expect(parseEvery("0s")).toEqual({ problem: expect.stringContaining("empty") })
    expect(parseEvery("soon")).toEqual({ problem: expect.stringContaining("is not a duration") })
  })

  it("is due one interval after the last time", () => {
    expect(nextAfter({ kind: "every", spec: "30m", tz: null }, t("2026-05-01T08:00:00Z"))).toBe(t("2026-05-01T08:30:00Z"))
  })
})

describe("at", () => {
  const now = t("2026-06-01T00:00:00Z")

  it("takes ISO times with an offset, and local times in a zone", () => {
    expect(parseAt("2026-06-02T08:00:00+02:00", null, now)).toEqual({ ok: t("2026-06-02T06:00:00Z") })
    expect(parseAt("2026-06-02T08:00", "Europe/Berlin", now)).toEqual({ ok: t("2026-06-02T06:00:00Z") })
    expect(parseAt("2026-12-02 08:00", "Europe/Berlin", now)).toEqual({ ok: t("2026-12-02T07:00:00Z") })
    expect(parseAt("2026-06-02T08:00", null, now)).toEqual({ ok: t("2026-06-02T08:00:00Z") })
  })

  it("refuses the past and what is not a time", () => {
    expect(parseAt("2026-05-31T23:59:59Z", null, now)).toEqual({ problem: "2026-05-31T23:59:59.000Z is in the past" })
    expect(parseAt("tomorrow", null, now)).toEqual({ problem: expect.stringContaining("is not a time") })
  })

  it("is due once", () => {
    const job = { kind: "at" as const, spec: "2026-06-02T06:00:00.000Z", tz: null }
    expect(nextAfter(job, now)).toBe(t("2026-06-02T06:00:00Z"))
    expect(nextAfter(job, t("2026-06-02T06:00:00Z"))).toBeNull()
  })
})

describe("deliver", () => {
  it("splits USER@CHANNEL", () => {
    expect(parseDeliver("alice@telegram")).toEqual({ ok: { user: "alice", channel: "telegram" } })
    expect(parseDeliver("alice")).toEqual({ ok: { user: "alice", channel: null } })
    expect(parseDeliver("@telegram")).toEqual({ problem: expect.stringContaining("names no user") })
  })
})
