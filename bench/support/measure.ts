/**
 * Timing, percentiles, memory marks and table output for the benchmarks. Figures are printed, never
 * asserted. Tables are Markdown pipe tables padded to line up, so stdout reads well and pastes
 * straight into BENCHMARKS.md.
 */
import { Effect } from "effect"

export interface SampleOptions {
  /** Untimed runs first (JIT, page cache, statement cache). */
  readonly warmup: number
  readonly min: number
  readonly max: number
  /** Stop after `min` samples once this much time has been spent measuring. */
  readonly budgetMs: number
}

export interface Summary {
  readonly n: number
  readonly p50: number
  readonly p95: number
  readonly mean: number
  readonly max: number
}

/** Nearest-rank percentile of ascending `sorted`. */
const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN

export const summarize = (samples: ReadonlyArray<number>): Summary => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    mean: sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length),
    max: sorted[sorted.length - 1] ?? Number.NaN
  }
}

const enough = (options: SampleOptions, n: number, spent: number) =>
  n >= options.max || (n >= options.min && spent >= options.budgetMs)

/** Times `run(i)` repeatedly inside the Effect runtime (no runPromise per sample). */
export const sampleEffect = <E, R>(
  options: SampleOptions,
  run: (i: number) => Effect.Effect<unknown, E, R>
): Effect.Effect<Summary, E, R> =>
  Effect.gen(function*() {
    for (let i = 0; i < options.warmup; i++) yield* run(i)
    const times: Array<number> = []
    let spent = 0
    while (!enough(options, times.length, spent)) {
      const t0 = performance.now()
      yield* run(times.length)
      const dt = performance.now() - t0
      times.push(dt)
      spent += dt
    }
    return summarize(times)
  })

export const sampleSync = (options: SampleOptions, run: (i: number) => unknown): Summary => {
  for (let i = 0; i < options.warmup; i++) run(i)
  const times: Array<number> = []
  let spent = 0
  while (!enough(options, times.length, spent)) {
    const t0 = performance.now()
    run(times.length)
    const dt = performance.now() - t0
    times.push(dt)
    spent += dt
  }
  return summarize(times)
}

/** Milliseconds with a precision that suits the magnitude. */
export const ms = (x: number): string =>
  !Number.isFinite(x) ? "–" : x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x < 1000 ? x.toFixed(1) : x.toFixed(0)

export const seconds = (milliseconds: number): string => `${(milliseconds / 1000).toFixed(1)} s`

export const rate = (perSecond: number): string => Math.round(perSecond).toLocaleString("en-US")

export const int = (x: number): string => x.toLocaleString("en-US")

export const ratio = (ours: number, floor: number): string =>
  !Number.isFinite(ours) || !Number.isFinite(floor) || floor <= 0 ? "–" : `${(ours / floor).toFixed(1)}×`

export const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(0)} MiB`

/** Terminal columns of `text`: CJK ideographs and full-width forms take two. */
const displayWidth = (text: string): number => {
  let n = 0
  for (const ch of text) n += /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/.test(ch) ? 2 : 1
  return n
}

const pad = (text: string, width: number, right: boolean): string => {
  const fill = " ".repeat(Math.max(0, width - displayWidth(text)))
  return right ? fill + text : text + fill
}

/** A Markdown table, columns padded; numbers (anything starting with a digit) right-aligned. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, c) => Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[c] ?? ""))))
  const numeric = headers.map((_, c) => rows.length > 0 && rows.every((r) => /^[\d–]/.test(r[c] ?? "")))
  const line = (cells: ReadonlyArray<string>) =>
    "| " + cells.map((cell, c) => pad(cell, widths[c] ?? 0, numeric[c] === true)).join(" | ") + " |"
  const rule = "|" + widths.map((w, c) => (numeric[c] === true ? "-".repeat(w + 1) + ":" : "-".repeat(w + 2))).join("|") + "|"
  return [line(headers), rule, ...rows.map(line)].join("\n")
}

/** Everything printed, in order, so the run can end with the memory section and a path to the log. */
export const out: Array<string> = []

export const print = (text = ""): void => {
  out.push(text)
  console.log(text)
}

export const section = (title: string, body: string, note?: string): void => {
  print(`\n### ${title}\n`)
  print(body)
  if (note !== undefined) print(`\n${note}`)
}

export interface MemoryMark {
  readonly phase: string
  readonly rss: number
  readonly heapUsed: number
  readonly external: number
}

/** Resident memory after each phase; the process peak comes from `resourceUsage().maxRSS`. */
export const rssMarks: Array<MemoryMark> = []

export const markRss = (phase: string): void => {
  const m = process.memoryUsage()
  rssMarks.push({ phase, rss: m.rss, heapUsed: m.heapUsed, external: m.external + m.arrayBuffers })
}

export const progress = (text: string): void => {
  process.stderr.write(`… ${text}\n`)
}
