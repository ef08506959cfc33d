/**
 * Search latency over a database of `sessions × perSession` messages spread over `users` users:
 * English (common word, rare word, phrase, prefix) and Chinese (2- and 4-character) queries, in
 * scope All, one user, and one session, top 10. The database is built with the batched append
 * (one call per session), and the build time is reported too.
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

const QUERIES: ReadonlyArray<{ readonly label: string; readonly query: string; readonly floor: FloorQuery }> = [
  { label: "common word", query: "docker", floor: { kind: "fts", match: "docker" } },
  { label: "rare word", query: "zeppelin", floor: { kind: "fts", match: "zeppelin" } },
  { label: "phrase", query: "\"connection refused\"", floor: { kind: "fts", match: "\"connection refused\"" } },
  { label: "prefix", query: "deploy*", floor: { kind: "fts", match: "deploy*" } },
  { label: "Chinese, 2 chars", query: "配置", floor: { kind: "substring", text: "配置" } },
  { label: "Chinese, 4 chars", query: "内存泄漏", floor: { kind: "trigram", match: "\"内存泄漏\"" } }
]

const LIMIT = 10

interface Row {
  readonly query: string
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
      const ours = await engine.runPromise(Effect.gen(function*() {
        const searcher = yield* Searcher
        const hits = yield* searcher.search(q.query, { scope: sc.scope, limit: LIMIT })
        const latency = yield* sampleEffect(samples, () => searcher.search(q.query, { scope: sc.scope, limit: LIMIT }))
        return { hits: hits.length, latency }
      }))
      const floorHits = floor.search(q.floor, sc.ids, LIMIT).length
      const floorLatency = sampleSync(samples, () => floor.search(q.floor, sc.ids, LIMIT))
      rows.push({
        query: `${q.label}: ${q.query}`,
        scope: sc.label,
        ours: ours.latency,
        floor: floorLatency,
        hits: ours.hits,
        floorHits,
        unranked: q.floor.kind === "substring"
      })
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
      ["query", "scope", "ours p50 / p95 (ms)", "floor p50 / p95 (ms)", "ours / floor (p50)", "hits ours / floor", "samples"],
      rows.map((r) => [
        r.query,
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
      "Chinese term); the 2-character term, which trigram cannot match, is an instr() scan newest-first that stops at\n" +
      "10 hits (* unranked, so not the same work: ours ranks every match in scope by occurrences, then recency).\n" +
      "Ours also searches summaries and builds snippets. A scoped FTS query still walks every match of the term in the\n" +
      "whole database (FTS5 MATCH first, then the join filters by scope), in both."
  )
  for (const r of rows) {
    if (r.scope === "all" || r.scope === "session") {
      ratios.push({
        operation: `search ${name}, ${r.query}, ${r.scope} (p50)`,
        ours: `${ms(r.ours.p50)} ms`,
        floor: `${ms(r.floor.p50)} ms`,
        ratio: ratio(r.ours.p50, r.floor.p50) + (r.unranked ? " *" : "")
      })
    }
  }
}
