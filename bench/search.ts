/**
 * Search latency over a database of `sessions × perSession` messages spread over `users` users:
 * English (common word, rare word, phrase, prefix, a question) and Chinese (1-, 2- and 4-character,
 * a question) queries, in scope All, one user, and one session, top 10, in strict mode (every word
 * must match, the old semantics) and ranked mode (the default). The database is built with the
 * batched append (one call per session), and the build time is reported too. The targets
 * (issue 11: a common word in one session of 1M messages ≤ 10 ms, a short CJK term in scope All at
 * 1M ≤ 20 ms) are printed as met or missed.
 *
 * `runSessionSize` (issue 25) times a rare marker in ONE session of 1k, 10k and 100k messages (a
 * database each, median of 20): a search's cost must not grow with the session it searches.
 */
import { Effect } from "effect"
import { join } from "node:path"
import type { SearchScope } from "../src/domain/memory/types.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { Searcher } from "../src/services/Searcher.ts"
import { dbBytes, ratios, removeDb, sessionOf } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { type FloorQuery, openFloor } from "./support/floor.ts"
import {
  int,
  mib,
  ms,
  progress,
  rate,
  ratio,
  sampleEffect,
  type SampleOptions,
  sampleSync,
  seconds,
  section,
  type Summary,
  table
} from "./support/measure.ts"
import { makeTranscript } from "./support/transcript.ts"

export interface SearchCorpus {
  readonly sessions: number
  readonly perSession: number
  readonly users: number
}

type Mode = "strict" | "ranked"

const QUERIES: ReadonlyArray<{ readonly label: string; readonly query: string; readonly modes: ReadonlyArray<Mode>; readonly floor: FloorQuery }> = [
  { label: "common word", query: "docker", modes: ["strict", "ranked"], floor: { kind: "fts", match: "docker" } },
  { label: "rare word", query: "zeppelin", modes: ["strict", "ranked"], floor: { kind: "fts", match: "zeppelin" } },
  { label: "phrase", query: "\"connection refused\"", modes: ["strict", "ranked"], floor: { kind: "fts", match: "\"connection refused\"" } },
  { label: "prefix", query: "deploy*", modes: ["strict", "ranked"], floor: { kind: "fts", match: "deploy*" } },
  {
    label: "question",
    query: "When did we change the docker deploy config?",
    modes: ["strict", "ranked"],
    floor: { kind: "fts", match: "change OR docker OR deploy OR config" }
  },
  { label: "Chinese, 1 char", query: "配", modes: ["strict", "ranked"], floor: { kind: "substring", text: "配" } },
  { label: "Chinese, 2 chars", query: "配置", modes: ["strict", "ranked"], floor: { kind: "substring", text: "配置" } },
  { label: "Chinese, 4 chars", query: "内存泄漏", modes: ["strict", "ranked"], floor: { kind: "trigram", match: "\"内存泄漏\"" } },
  { label: "Chinese question", query: "我们什么时候修复了内存泄漏", modes: ["ranked"], floor: { kind: "trigram", match: "\"内存泄漏\"" } }
]

const LIMIT = 10

/** A word of no other message: the marker planted in the middle of each session. */
const MARKER = "qzx7381marker"

/** Median of 20 (after 10 untimed runs: the first database measured warms the JIT up). */
const MEDIAN_OF_20: SampleOptions = { warmup: 10, min: 20, max: 20, budgetMs: 0 }

export interface SizeRow {
  readonly messages: number
  readonly latency: Summary
  readonly hits: number
}

/**
 * A rare marker in one session of each size (issue 25: ≤ 1 ms at 100k, and the 100k / 1k ratio
 * ≤ 3×), in process, median of 20.
 */
export const runSessionSize = async (dir: string, sizes: ReadonlyArray<number> = [1_000, 10_000, 100_000]) => {
  const rows: Array<SizeRow> = []
  for (const size of sizes) {
    const file = join(dir, `search-size-${size}.db`)
    const engine = openEngine(file)
    const session = sessionOf(0, 1)
    const transcript = makeTranscript({ seed: 777 })
    progress(`search, one session of ${int(size)} messages: building`)
    for (let done = 0; done < size; done += 1_000) {
      const messages = transcript.take(Math.min(1_000, size - done))
      if (done === Math.floor(size / 2000) * 1_000) {
        const at = messages[0]?.createdAt ?? 1_700_000_000_000
        messages.splice(1, 0, { role: "user", content: `Remember the code ${MARKER} for the vault.`, createdAt: at })
        messages.pop()
      }
      await engine.runPromise(MemoryProvider.use((m) => m.append(session, messages)))
    }
    const measured = await engine.runPromise(Effect.gen(function*() {
      const searcher = yield* Searcher
      const search = () => searcher.search(MARKER, { scope: { _tag: "Session", sessionKey: session.key }, limit: LIMIT })
      const hits = yield* search()
      const latency = yield* sampleEffect(MEDIAN_OF_20, search)
      return { hits: hits.length, latency }
    }))
    rows.push({ messages: size, ...measured })
    await engine.dispose()
    removeDb(file)
  }
  const first = rows[0]
  const last = rows[rows.length - 1]
  section(
    "A rare marker in one session, by the session's size (issue 25; median of 20, in process)",
    table(
      ["session", "p50 (ms)", "p95 (ms)", "hits", `ratio to ${int(first?.messages ?? 0)}`],
      rows.map((r) => [
        `${int(r.messages)} messages`,
        ms(r.latency.p50),
        ms(r.latency.p95),
        String(r.hits),
        ratio(r.latency.p50, first?.latency.p50 ?? Number.NaN)
      ])
    ),
    first === undefined || last === undefined || last === first
      ? undefined
      : `Targets: ${int(last.messages)} / ${int(first.messages)} = ${ratio(last.latency.p50, first.latency.p50)} (≤ 3×: ` +
        `${last.latency.p50 <= 3 * first.latency.p50 ? "met" : "missed"}); ${ms(last.latency.p50)} ms at ${int(last.messages)} ` +
        `(≤ 1 ms: ${last.latency.p50 <= 1 ? "met" : "missed"}).`
  )
  for (const r of rows) {
    ratios.push({ operation: `rare marker, one session of ${int(r.messages)} (p50)`, ours: `${ms(r.latency.p50)} ms`, floor: "–", ratio: "–" })
  }
  return rows
}

interface Row {
  readonly query: string
  readonly mode: Mode
  readonly scope: string
  readonly ours: Summary
  readonly floor: Summary
  readonly hits: number
  readonly floorHits: number
  /** The floor returns the newest matches, not a ranking, so it can stop early. */
  readonly unranked: boolean
}

export const runSearch = async (dir: string, corpus: SearchCorpus): Promise<void> => {
  const total = corpus.sessions * corpus.perSession
  const name = total >= 1_000_000 ? `${total / 1_000_000}M` : `${total / 1_000}k`
  const file = join(dir, `search-${name}.db`)
  const floorFile = join(dir, `search-${name}-floor.db`)
  const engine = openEngine(file)
  const floor = openFloor(floorFile)
  const build = { ours: 0, floor: 0 }

  progress(`search ${name}: building (${corpus.sessions} sessions × ${int(corpus.perSession)} messages)`)
  for (let s = 0; s < corpus.sessions; s++) {
    const session = sessionOf(s, corpus.users)
    const messages = makeTranscript({ seed: 10_000 + s }).take(corpus.perSession)
    const t0 = performance.now()
    await engine.runPromise(MemoryProvider.use((m) => m.append(session, messages)))
    const t1 = performance.now()
    floor.appendBatch(s + 1, messages)
    build.floor += performance.now() - t1
    build.ours += t1 - t0
    if ((s + 1) % 100 === 0) {
      const m = process.memoryUsage()
      progress(`search ${name}: ${int((s + 1) * corpus.perSession)} messages (RSS ${mib(m.rss)}, heap ${mib(m.heapUsed)})`)
    }
  }

  // One session in the middle, and its user's sessions (conversation ids are 1-based, in order).
  const target = Math.floor(corpus.sessions / 2)
  const session = sessionOf(target, corpus.users)
  const userSessions = Array.from({ length: corpus.sessions }, (_, i) => i).filter((i) => i % corpus.users === target % corpus.users)
  const scopes: ReadonlyArray<{ readonly label: string; readonly scope: SearchScope; readonly ids: ReadonlyArray<number> | null }> = [
    { label: "all", scope: { _tag: "All" }, ids: null },
    { label: `user (${userSessions.length} sessions)`, scope: { _tag: "User", userId: session.userId }, ids: userSessions.map((i) => i + 1) },
    { label: "session", scope: { _tag: "Session", sessionKey: session.key }, ids: [target + 1] }
  ]
  const samples: SampleOptions = total >= 1_000_000
    ? { warmup: 1, min: 5, max: 50, budgetMs: 1_500 }
    : { warmup: 2, min: 10, max: 100, budgetMs: 1_500 }

  const rows: Array<Row> = []
  for (const q of QUERIES) {
    progress(`search ${name}: ${q.label}`)
    for (const sc of scopes) {
      const floorHits = floor.search(q.floor, sc.ids, LIMIT).length
      const floorLatency = sampleSync(samples, () => floor.search(q.floor, sc.ids, LIMIT))
      for (const mode of q.modes) {
        const ours = await engine.runPromise(Effect.gen(function*() {
          const searcher = yield* Searcher
          const hits = yield* searcher.search(q.query, { scope: sc.scope, limit: LIMIT, mode })
          const latency = yield* sampleEffect(samples, () => searcher.search(q.query, { scope: sc.scope, limit: LIMIT, mode }))
          return { hits: hits.length, latency }
        }))
        rows.push({
          query: `${q.label}: ${q.query}`,
          mode,
          scope: sc.label,
          ours: ours.latency,
          floor: floorLatency,
          hits: ours.hits,
          floorHits,
          unranked: q.floor.kind === "substring"
        })
      }
    }
  }
  const bytes = dbBytes(file)
  const floorBytes = dbBytes(floorFile)
  await engine.dispose()
  floor.close()
  removeDb(file)
  removeDb(floorFile)

  section(
    `Search latency over ${int(total)} messages (top ${LIMIT})`,
    table(
      ["query", "mode", "scope", "ours p50 / p95 (ms)", "floor p50 / p95 (ms)", "ours / floor (p50)", "hits ours / floor", "samples"],
      rows.map((r) => [
        r.query,
        r.mode,
        r.scope,
        `${ms(r.ours.p50)} / ${ms(r.ours.p95)}`,
        `${ms(r.floor.p50)} / ${ms(r.floor.p95)}`,
        ratio(r.ours.p50, r.floor.p50) + (r.unranked ? " *" : ""),
        `${r.hits} / ${r.floorHits}`,
        String(r.ours.n)
      ])
    ),
    `Build (batched append, one call of ${int(corpus.perSession)} per session): ${seconds(build.ours)} ours ` +
      `(${rate(total / (build.ours / 1000))} msg/s) vs ${seconds(build.floor)} floor ` +
      `(${rate(total / (build.floor / 1000))} msg/s); database ${mib(bytes)} ours vs ${mib(floorBytes)} floor.\n` +
      "Floor: FTS5 MATCH joined to messages, ORDER BY bm25 LIMIT 10 (porter for English, trigram for the 4-character\n" +
      "Chinese term; the question as an OR of its words), the scope as a filter on the join; the 1- and 2-character\n" +
      "terms, which trigram cannot match, are an instr() scan newest-first that stops at 10 hits (* unranked). The\n" +
      "floor's scoped FTS queries walk every match in the database. Ours (migrations/0010): the scope is a token ANDed\n" +
      "into the MATCH, each term reads its newest 2,000 matches in scope, at most 250 candidates are ranked in\n" +
      "TypeScript (layers/memory/memorySearch.ts); it also searches summaries and builds snippets."
  )
  const goal = (label: string, row: Row | undefined, limitMs: number) =>
    row === undefined
      ? `- ${label}: not measured`
      : `- ${label} (${row.mode}): p50 ${ms(row.ours.p50)} ms, target ≤ ${limitMs} ms: target ${row.ours.p50 <= limitMs ? "met" : "missed"}`
  const find = (query: string, mode: Mode, scope: (s: string) => boolean) =>
    rows.find((r) => r.query.startsWith(query) && r.mode === mode && scope(r.scope))
  if (total >= 1_000_000) {
    section(`Issue 11 targets at ${name} messages`, [
      goal("common word, one session", find("common word", "ranked", (s) => s === "session"), 10),
      goal("common word, one session", find("common word", "strict", (s) => s === "session"), 10),
      goal("Chinese, 1 char, all", find("Chinese, 1 char", "ranked", (s) => s === "all"), 20),
      goal("Chinese, 2 chars, all", find("Chinese, 2 chars", "ranked", (s) => s === "all"), 20),
      goal("Chinese, 2 chars, all", find("Chinese, 2 chars", "strict", (s) => s === "all"), 20)
    ].join("\n"))
    section(`Issue 25 target at ${name} messages`, goal("question, one user", find("question", "ranked", (s) => s.startsWith("user")), 20))
  }
  for (const r of rows) {
    if (r.scope === "all" || r.scope === "session") {
      ratios.push({
        operation: `search ${name}, ${r.query}, ${r.mode}, ${r.scope} (p50)`,
        ours: `${ms(r.ours.p50)} ms`,
        floor: `${ms(r.floor.p50)} ms`,
        ratio: ratio(r.ours.p50, r.floor.p50) + (r.unranked ? " *" : "")
      })
    }
  }
}
