/**
 * Schedules, pure: checking what an operator or an agent asked for (a 5-field cron in a time zone,
 * an interval, a one-shot time) and computing when a job is next due. Cron matching and DST are
 * Effect's `Cron` (a wall-clock time skipped by the spring change runs at the first instant after
 * the gap; one repeated in autumn runs once, at its first occurrence).
 */
import { Cron, DateTime, Option, Result } from "effect"
import type { ScheduleKind } from "./types.ts"

export type Checked<A> = { readonly ok: A } | { readonly problem: string }

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/** `2s`, `30m`, `1h30m`, `1d` → milliseconds. */
export const parseEvery = (text: string): Checked<number> => {
  const t = text.trim().toLowerCase()
  if (!/^(\d+[smhdw])+$/.test(t)) return { problem: `"${text}" is not a duration (examples: 2s, 30m, 1h30m, 1d)` }
  let ms = 0
  for (const m of t.matchAll(/(\d+)([smhdw])/g)) ms += Number(m[1]) * (UNIT_MS[m[2] ?? "s"] ?? 0)
  return ms > 0 ? { ok: ms } : { problem: `"${text}" is an empty interval` }
}

/** A time zone name (`Europe/Berlin`), or why not. */
export const checkZone = (tz: string): Checked<string> =>
  Option.isSome(DateTime.zoneMakeNamed(tz)) ? { ok: tz } : { problem: `unknown time zone "${tz}" (use an IANA name such as Europe/Berlin)` }

/** A 5-field cron expression in `tz` (UTC when none); 6-field (seconds) expressions are refused. */
export const parseCron = (expr: string, tz: string | null): Checked<Cron.Cron> => {
  const fields = expr.trim().split(/\s+/).filter((f) => f !== "")
  if (fields.length !== 5) {
    return { problem: `cron "${expr}" has ${fields.length} field(s); use 5: minute hour day-of-month month day-of-week` }
  }
  if (tz !== null) {
    const zone = checkZone(tz)
    if ("problem" in zone) return zone
  }
  const parsed = Cron.parse(fields.join(" "), tz ?? "UTC")
  return Result.isSuccess(parsed) ? { ok: parsed.success } : { problem: `bad cron "${expr}": ${parsed.failure.message}` }
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/

/**
 * A one-shot time: ISO 8601 with an offset (`2026-12-01T08:00:00+01:00`, `…Z`), or a local time
 * (`2026-12-01T08:00`, `2026-12-01 08:00`) in `tz` (UTC when none). Must be after `now`.
 */
export const parseAt = (text: string, tz: string | null, now: number): Checked<number> => {
  const t = text.trim()
  let ms: number
  const local = LOCAL.exec(t)
  if (local !== null) {
    const [y, mo, d, h, mi, s] = local.slice(1).map((p) => Number(p ?? 0))
    const wall = Date.UTC(y ?? 0, (mo ?? 1) - 1, d ?? 1, h ?? 0, mi ?? 0, s ?? 0)
    if (tz === null) ms = wall
    else {
      const zone = checkZone(tz)
      if ("problem" in zone) return zone
      const zoned = DateTime.makeZoned(wall, { timeZone: tz, adjustForTimeZone: true })
      if (Option.isNone(zoned)) return { problem: `"${text}" does not exist in ${tz}` }
      ms = DateTime.toEpochMillis(zoned.value)
    }
  } else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(t)) {
    ms = Date.parse(t)
  } else {
    return { problem: `"${text}" is not a time (use ISO 8601, e.g. 2026-12-01T08:00:00+01:00, or 2026-12-01T08:00 with --tz)` }
  }
  if (!Number.isFinite(ms)) return { problem: `"${text}" is not a valid time` }
  if (ms <= now) return { problem: `${new Date(ms).toISOString()} is in the past` }
  return { ok: ms }
}

/** What the scheduler needs of a job to compute its times. */
export interface Timing {
  readonly kind: ScheduleKind
  readonly spec: string
  readonly tz: string | null
}

/**
 * The first time after `after` (strictly) the job is due; null for a one-shot (`at`) time that is
 * not after `after` (it has had its run) and for a schedule that no longer parses.
 */
export const nextAfter = (timing: Timing, after: number): number | null => {
  switch (timing.kind) {
    case "cron": {
      const cron = parseCron(timing.spec, timing.tz)
      return "problem" in cron ? null : Cron.next(cron.ok, new Date(after)).getTime()
    }
    case "every": {
      const every = parseEvery(timing.spec)
      return "problem" in every ? null : after + every.ok
    }
    case "at": {
      const at = Date.parse(timing.spec)
      return Number.isFinite(at) && at > after ? at : null
    }
  }
}

/** `USER[@CHANNEL]` → user and channel. */
export const parseDeliver = (text: string): Checked<{ readonly user: string; readonly channel: string | null }> => {
  const at = text.lastIndexOf("@")
  const user = (at < 0 ? text : text.slice(0, at)).trim()
  const channel = at < 0 ? null : text.slice(at + 1).trim()
  if (user === "") return { problem: `--deliver "${text}" names no user (USER or USER@CHANNEL)` }
  if (channel === "") return { problem: `--deliver "${text}" names no channel after @` }
  return { ok: { user, channel } }
}

/** How a schedule reads in a list: `cron 0 8 * * * (Europe/Berlin)`, `every 2s`, `at 2026-…Z`. */
export const describeSchedule = (timing: Timing): string =>
  timing.kind === "cron"
    ? `cron ${timing.spec}${timing.tz === null ? "" : ` (${timing.tz})`}`
    : timing.kind === "every"
    ? `every ${timing.spec}`
    : `at ${timing.spec}`
