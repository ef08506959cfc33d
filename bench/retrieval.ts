/**
 * Retrieval evaluation: does search find the message that answers a question asked later, in other
 * words? A generated dataset (bench/support/retrievalData.ts: users × sessions of everyday chat with
 * planted facts, and paraphrased questions with the seqs of their evidence) is appended through
 * LcmMemory into a real, migrated database; one session per user is then fully compacted (the
 * deterministic summarizer, leaf summaries of about 25 messages), so summaries are searched too. Every question is searched with
 * `limit: 20` in its session and in its user's sessions, in `strict` mode (every term must match:
 * the all-terms baseline) and `ranked` mode (lexical and context-aware, below).
 *
 * A hit is relevant when it is an evidence message, or a summary whose source range covers one
 * (from `Explorer.describe`). Reported: recall@5/10/20 (share of questions with a relevant hit in
 * the top k), MRR (1 / rank of the first relevant hit, 0 when none in 20), per mode and scope,
 * overall and per category; apart: recall@10 when a neighbour of the evidence (the message just
 * before or after it) also counts, and the hard slice (questions sharing no content word with their
 * evidence). Query latency p50/p95 per mode and scope. Same seed, same data, same figures.
 *
 * Issue 24: in half of the sessions the model searched its memory for the questions before (1–3
 * memory tool calls per question, each with its result quoting the evidence: retrievalData.ts). The
 * slice of those questions is reported apart, for the default search (the memory tool's own calls
 * and results left out) and with `includeMemoryCalls` ("ranked + memory calls"), with how often the
 * first hit is one of those calls or results.
 *
 * Issue 25: the kinds where plain BM25 fails (bench/support/factsContext.ts): context-dependent
 * questions (their words only in the turns around the answer, English and Chinese) and multi-hop ones
 * (two evidence turns; "any evidence turn in the top k" as for every kind, and "all of them"). Runs:
 * `lexical` (ranked, `neighbours: false`) against `context-aware` (ranked, the default), next to strict,
 * the memory-calls run and the reference, and `dense (fake) + context` (every row embedded with the fake
 * LLM server's hashed-word vectors, fused with the ranking: the mechanics only). The kinds of issue 11 are reported as before, apart, so their
 * figures stay comparable.
 *
 * For whoever tunes search: the run ends with sample misses of `ranked` in session scope, two per
 * category; RETRIEVAL_MISSES=ref shows the reference's instead, RETRIEVAL_SCOPE=user the user scope,
 * RETRIEVAL_MISS_COUNT=n more of them; RETRIEVAL_DEBUG=1 prints every candidate question the
 * dataset's checks drop, and why.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { join } from "node:path"
import type { SearchHit, SearchScope } from "../src/domain/memory/types.ts"
import { messageText } from "../src/domain/message.ts"
import * as DagCompactionEngine from "../src/layers/memory/DagCompactionEngine.ts"
import * as DeterministicSummarizer from "../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as SessionLocks from "../src/layers/memory/SessionLocks.ts"
import * as SqliteMemoryStore from "../src/layers/memory/SqliteMemoryStore.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import { Compactor } from "../src/services/Compactor.ts"
import { Explorer } from "../src/services/Explorer.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { MemoryStore } from "../src/services/MemoryStore.ts"
import { Searcher } from "../src/services/Searcher.ts"
import { removeDb } from "./support/common.ts"
import { CATEGORIES, CONTEXT_CATEGORIES } from "./support/facts.ts"
import { int, ms, print, progress, seconds, section, summarize, table } from "./support/measure.ts"
import { makeDataset, orTerms, type Question } from "./support/retrievalData.ts"
import { fakeEmbedding } from "../test/support/fakeLlm/embeddings.ts"

const SEED = 11
const LIMIT = 20
/**
 * The two modes of `Searcher.search`, and a reference that is not an engine: the question reduced to
 * its content words joined with OR (`orTerms`), searched in strict mode, i.e. plain bm25 over OR-ed
 * keywords. It shows what the harness measures when hits do come back, and is a floor for `ranked`.
 */
/**
 * Issue 25: `lexical` is ranked mode with `neighbours: false` (each row's own text, as before issue
 * 25), `context-aware` the default ranked mode (`neighbours` true: each row matched with its
 * neighbouring turns too). Until the neighbours option is implemented the two give the same figures.
 */
const RUNS = [
  { name: "strict", mode: "strict", query: (q: string) => q, includeMemoryCalls: false, neighbours: undefined, dense: false },
  { name: "lexical", mode: "ranked", query: (q: string) => q, includeMemoryCalls: false, neighbours: false, dense: false },
  { name: "context-aware", mode: "ranked", query: (q: string) => q, includeMemoryCalls: false, neighbours: undefined, dense: false },
  // Dense (issue 25): every message and summary embedded with the fake LLM server's vectors (hashed
  // words, computed in process as the fake computes them), the question too, fused with the
  // context-aware ranking. Hashed words are lexical matching by other means: the figures show the
  // mechanics (the fusion works, costs this much), not what a real embedding model would find.
  { name: "dense (fake) + context", mode: "ranked", query: (q: string) => q, includeMemoryCalls: false, neighbours: undefined, dense: true },
  { name: "ranked + memory calls", mode: "ranked", query: (q: string) => q, includeMemoryCalls: true, neighbours: undefined, dense: false },
  { name: "or-terms (ref.)", mode: "strict", query: orTerms, includeMemoryCalls: false, neighbours: undefined, dense: false }
] as const
/** The model name the bench's fake vectors are stored under. */
const FAKE_MODEL = "fake-hashed-words"
const MODES = RUNS.map((r) => r.name)
const SCOPES = ["session", "user"] as const
type Mode = (typeof RUNS)[number]["name"]
type ScopeName = (typeof SCOPES)[number]

interface Outcome {
  readonly question: Question
  readonly mode: Mode
  readonly scope: ScopeName
  /** 1-based rank of the first relevant hit, null when none in the top 20. */
  readonly rank: number | null
  /** The same, when a message next to an evidence message also counts. */
  readonly nearRank: number | null
  /** 1-based rank at which every evidence message is covered (multi-hop: "all"), null when not in 20. */
  readonly allRank: number | null
  readonly firstIsSummary: boolean
  /** The first hit is one of the earlier lookups' memory calls or results. */
  readonly firstIsMemoryCall: boolean
  readonly hits: number
  readonly top: string
  readonly ms: number
}

/**
 * LcmMemory.layerSqlite as in bench/support/engine.ts, but with summarizer inputs of at most 1,000
 * tokens, so that a leaf summary covers about 25 messages. With the default (20,000) one leaf takes
 * a whole session of this dataset, and a hit on it would "cover" the evidence of every question of
 * the session.
 */
const openRetrievalEngine = (file: string) =>
  ManagedRuntime.make(
    LcmMemory.layer.pipe(
      Layer.provide(DagCompactionEngine.layer({ ...DagCompactionEngine.defaultConfig, chunkTokens: 1_000 })),
      Layer.provideMerge(Layer.merge(SqliteMemoryStore.layer, SessionLocks.layer)),
      Layer.provide(DeterministicSummarizer.layer),
      Layer.provideMerge(Sqlite.layer(file))
    )
  )

const pct = (x: number) => `${(100 * x).toFixed(1)} %`
const recall = (os: ReadonlyArray<Outcome>, k: number, near = false) =>
  os.filter((o) => {
    const r = near ? o.nearRank : o.rank
    return r !== null && r <= k
  }).length / Math.max(1, os.length)
const mrr = (os: ReadonlyArray<Outcome>) => os.reduce((s, o) => s + (o.rank === null ? 0 : 1 / o.rank), 0) / Math.max(1, os.length)
const compact = (os: ReadonlyArray<Outcome>) =>
  os.length === 0 ? "–" : `${pct(recall(os, 5))} / ${pct(recall(os, 10))} / ${pct(recall(os, 20))} · ${mrr(os).toFixed(3)}`

export const runRetrieval = async (dir: string): Promise<void> => {
  const t0 = performance.now()
  const data = makeDataset({ seed: SEED, users: 8, sessionsPerUser: 6, fillerExchanges: 160 })
  const messages = data.sessions.reduce((n, s) => n + s.messages.length, 0)
  progress(`retrieval: ${data.sessions.length} sessions, ${int(messages)} messages, ${data.questions.length} questions`)
  const file = join(dir, "retrieval.db")
  const engine = openRetrievalEngine(file)
  try {
    const built = await engine.runPromise(Effect.gen(function*() {
      const provider = yield* MemoryProvider
      const store = yield* MemoryStore
      const compactor = yield* Compactor
      for (const s of data.sessions) {
        yield* provider.append(s.ref, s.messages)
        // The evidence is addressed by seq: check that the store kept every message at its position.
        const c = yield* store.getConversation(s.ref.key)
        const stored = yield* store.messagesBySeq(c.id, 1, s.messages.length + 1)
        const same = stored.length === s.messages.length &&
          stored.every((m, i) => m.seq === i + 1 && messageText(m.message) === messageText(s.messages[i] ?? m.message))
        if (!same) return yield* Effect.die(new Error(`retrieval: ${s.ref.key} was not stored in order`))
      }
      const t1 = performance.now()
      // One session per user, fully compacted (small leaves: see openRetrievalEngine).
      let summaries = 0
      for (const s of data.sessions.filter((_, i) => i % 6 === 1)) {
        summaries += (yield* compactor.compact(s.ref.key, { full: true })).summaryIds.length
      }
      const compactMs = performance.now() - t1
      // Every message and summary embedded with the fake's vectors, as the embedding worker would.
      const t2 = performance.now()
      let vectors = 0
      for (const source of ["message", "summary"] as const) {
        for (;;) {
          const pending = yield* store.pendingEmbeddings({ agentId: "retrieval", model: FAKE_MODEL, source, afterId: 0, limit: 2_000 })
          if (pending.length === 0) break
          vectors += yield* store.putVectors(FAKE_MODEL, pending.map((p) => ({ source, id: p.id, vector: fakeEmbedding(p.text) })))
        }
      }
      return { summaries, compactMs, vectors, embedMs: performance.now() - t2 }
    }))
    const buildMs = performance.now() - t0

    const outcomes = await engine.runPromise(Effect.gen(function*() {
      const searcher = yield* Searcher
      const explorer = yield* Explorer
      const sources = new Map<string, { readonly sessionKey: string; readonly first: number; readonly last: number }>()
      const sourceOf = (id: string) =>
        Effect.gen(function*() {
          const known = sources.get(id)
          if (known !== undefined) return known
          const d = yield* explorer.describe(id)
          const range = { sessionKey: d.sessionKey, first: d.sourceRange.firstSeq, last: d.sourceRange.lastSeq }
          sources.set(id, range)
          return range
        })
      const store = yield* MemoryStore
      const seqOf = new Map<number, { readonly sessionKey: string; readonly seq: number }>()
      for (const s of data.sessions) {
        const c = yield* store.getConversation(s.ref.key)
        for (const m of yield* store.messagesBySeq(c.id, 1, s.messages.length)) seqOf.set(m.id, { sessionKey: s.ref.key, seq: m.seq })
      }
      /** How close a hit is to the evidence: 0 relevant, 1 a neighbouring message, null neither. */
      const distance = (q: Question, hit: SearchHit) =>
        Effect.gen(function*() {
          if (hit.kind === "summary") {
            const r = yield* sourceOf(hit.id)
            return r.sessionKey === q.sessionKey && q.evidence.some((e) => e >= r.first && e <= r.last) ? 0 : null
          }
          const m = seqOf.get(Number(hit.id.replace(/^msg_/, "")))
          if (m === undefined || m.sessionKey !== q.sessionKey) return null
          const d = Math.min(...q.evidence.map((e) => Math.abs(e - m.seq)))
          return d === 0 ? 0 : d === 1 ? 1 : null
        })
      /** The question's evidence seqs a hit is or covers. */
      const covers = (q: Question, hit: SearchHit) =>
        Effect.gen(function*() {
          if (hit.kind === "summary") {
            const r = yield* sourceOf(hit.id)
            return r.sessionKey === q.sessionKey ? q.evidence.filter((e) => e >= r.first && e <= r.last) : []
          }
          const m = seqOf.get(Number(hit.id.replace(/^msg_/, "")))
          return m !== undefined && m.sessionKey === q.sessionKey && q.evidence.includes(m.seq) ? [m.seq] : []
        })
      const isMemoryCall = (hit: SearchHit | undefined) => {
        if (hit === undefined || hit.kind !== "message") return false
        const m = seqOf.get(Number(hit.id.replace(/^msg_/, "")))
        return m !== undefined && data.memoryCalls.get(m.sessionKey)?.has(m.seq) === true
      }
      const out: Array<Outcome> = []
      for (const run of RUNS) {
        const { mode, name, includeMemoryCalls } = run
        for (const scopeName of SCOPES) {
          progress(`retrieval: ${name}, ${scopeName} scope`)
          const scopeOf = (q: Question): SearchScope =>
            scopeName === "session" ? { _tag: "Session", sessionKey: q.sessionKey } : { _tag: "User", userId: q.userId }
          const first = data.questions[0]
          const options = (q: Question) => ({
            scope: scopeOf(q),
            limit: LIMIT,
            mode,
            includeMemoryCalls,
            ...(run.neighbours === undefined ? {} : { neighbours: run.neighbours }),
            ...(run.dense ? { dense: { model: FAKE_MODEL, vector: fakeEmbedding(q.text) } } : {})
          })
          if (first !== undefined) yield* searcher.search(run.query(first.text), options(first)) // warm-up
          for (const q of data.questions) {
            const started = performance.now()
            const hits = yield* searcher.search(run.query(q.text), options(q))
            const took = performance.now() - started
            let rank: number | null = null
            let nearRank: number | null = null
            let allRank: number | null = null
            let firstIsSummary = false
            const covered = new Set<number>()
            for (let i = 0; i < hits.length && allRank === null; i++) {
              const hit = hits[i]
              if (hit === undefined) continue
              const d = yield* distance(q, hit)
              if (d !== null && nearRank === null) nearRank = i + 1
              if (d === 0 && rank === null) {
                rank = i + 1
                firstIsSummary = hit.kind === "summary"
              }
              for (const e of yield* covers(q, hit)) covered.add(e)
              if (covered.size === q.evidence.length) allRank = i + 1
            }
            out.push({
              question: q,
              mode: name,
              scope: scopeName,
              rank,
              nearRank,
              allRank,
              firstIsSummary,
              firstIsMemoryCall: isMemoryCall(hits[0]),
              hits: hits.length,
              top: hits[0]?.snippet ?? "",
              ms: took
            })
          }
        }
      }
      return out
    }))
    report(data, messages, built, buildMs, outcomes)
  } finally {
    await engine.dispose()
    removeDb(file)
  }
}

const report = (
  data: ReturnType<typeof makeDataset>,
  messages: number,
  built: { readonly summaries: number; readonly compactMs: number; readonly vectors: number; readonly embedMs: number },
  buildMs: number,
  outcomes: ReadonlyArray<Outcome>
): void => {
  // The kinds of issue 11 (`main`, comparable with earlier runs) and those of issue 25, apart.
  const isOld = (q: Question) => CATEGORIES.includes(q.category)
  const main = data.questions.filter((q) => !q.hard && isOld(q))
  const newer = data.questions.filter((q) => !isOld(q))
  const hard = data.questions.filter((q) => q.hard).length
  const of = (mode: Mode, scope: ScopeName, hardSlice = false) =>
    outcomes.filter((o) => o.mode === mode && o.scope === scope && o.question.hard === hardSlice)
  const users = new Set(data.sessions.map((s) => s.ref.userId)).size
  const meanShared = main.reduce((n, q) => n + q.shared.length, 0) / Math.max(1, main.length)
  const d = data.dropped
  const dropped = d.unfair + d.notHard + d.copies + d.leaks + d.noNeighbour
  const count = (c: string) => newer.filter((q) => q.category === c).length

  const rows = MODES.flatMap((mode) =>
    SCOPES.map((scope) => {
      const os = of(mode, scope).filter((o) => isOld(o.question))
      const lat = summarize(outcomes.filter((o) => o.mode === mode && o.scope === scope).map((o) => o.ms))
      return [
        mode,
        scope,
        String(os.length),
        pct(recall(os, 5)),
        pct(recall(os, 10)),
        pct(recall(os, 20)),
        mrr(os).toFixed(3),
        pct(recall(os, 10, true)),
        String(os.filter((o) => o.firstIsSummary).length),
        String(os.filter((o) => o.hits === 0).length),
        ms(lat.p50),
        ms(lat.p95)
      ]
    })
  )
  section(
    `Retrieval evaluation, the kinds of issue 11 (${main.length} questions, top ${LIMIT})`,
    table(
      ["mode", "scope", "questions", "recall@5", "recall@10", "recall@20", "MRR", "recall@10 incl. neighbours", "first hit a summary", "no result", "p50 (ms)", "p95 (ms)"],
      rows
    ),
    `Dataset (seed ${SEED}): ${users} users × ${data.sessions.length / users} sessions, ${int(messages)} messages ` +
      `(${data.facts} planted facts, ${data.distractors} distractor messages), ${built.summaries} summaries from the full ` +
      `compaction of ${users} sessions; ${main.length} questions of issue 11's kinds (${hard} more in the hard slice), sharing ` +
      `${meanShared.toFixed(1)} content words with their evidence on average; ${newer.length} of issue 25's kinds ` +
      `(context ${count("context")}, context (Chinese) ${count("context (Chinese)")}, multi-hop ${count("multi-hop")}). ` +
      `${dropped} candidate questions dropped by the checks (${d.copies} too close to the stored wording, ${d.unfair} sharing no word, ` +
      `${d.notHard} hard ones sharing a word, ${d.leaks} context questions sharing a word with their evidence turn, ` +
      `${d.noNeighbour} sharing none with the turns around it). Build ${seconds(buildMs)} (compaction ${seconds(built.compactMs)}, ` +
      `${int(built.vectors)} fake vectors stored in ${seconds(built.embedMs)}).\n` +
      "recall@k: share of questions with an evidence message (or a summary covering one) in the top k; MRR: mean of\n" +
      "1 / rank of the first such hit (0 when none in 20). Neighbours: the message just before or after an evidence message.\n" +
      "lexical: ranked with neighbours: false; context-aware: ranked as by default (neighbours: true).\n" +
      "Latency (all questions, every kind): every question once, after one warm-up query."
  )
  const catRows = CATEGORIES.flatMap((c) =>
    SCOPES.map((scope) => [
      c,
      scope,
      String(main.filter((q) => q.category === c).length),
      ...MODES.map((mode) => compact(of(mode, scope).filter((o) => o.question.category === c)))
    ])
  )
  section("Retrieval by category (recall@5 / @10 / @20 · MRR)", table(["category", "scope", "questions", ...MODES], catRows))

  // Issue 25: per kind × scope × mode, the kinds of issue 11 taken together as the first kind.
  const kinds: ReadonlyArray<readonly [string, (q: Question) => boolean]> = [
    ["issue 11's kinds", (q) => isOld(q) && !q.hard],
    ...CONTEXT_CATEGORIES.map((c) => [c, (q: Question) => q.category === c] as const)
  ]
  const all = (os: ReadonlyArray<Outcome>, k: number) => pct(os.filter((o) => o.allRank !== null && o.allRank <= k).length / Math.max(1, os.length))
  const kindRows = kinds.flatMap(([kind, is]) =>
    SCOPES.flatMap((scope) => [
      ...MODES.map((mode) => {
        const os = of(mode, scope).filter((o) => is(o.question))
        const multi = kind === "multi-hop"
        return [
          kind,
          scope,
          mode,
          String(os.length),
          pct(recall(os, 5)),
          pct(recall(os, 10)),
          pct(recall(os, 20)),
          mrr(os).toFixed(3),
          pct(recall(os, 10, true)),
          multi ? `${all(os, 5)} / ${all(os, 10)} / ${all(os, 20)}` : "–"
        ]
      })
    ])
  )
  section(
    "Retrieval by kind × scope × mode (issue 25)",
    table(["kind", "scope", "mode", "questions", "recall@5", "recall@10", "recall@20", "MRR", "recall@10 incl. neighbours", "all evidence @5 / @10 / @20"], kindRows),
    "context: the question's words are only in the turns around the answer (±1..±2), none in the answer itself;\n" +
      "multi-hop: the answer needs two turns (told apart in the session, or split by a turn of the other side): recall@k\n" +
      "counts any evidence turn in the top k, \"all evidence\" every one of them. The dense row uses the fake LLM\n" +
      "server's hashed-word vectors (test/support/fakeLlm/embeddings.ts): it shows the mechanics of the fusion only,\n" +
      "not the quality of real embeddings."
  )
  section(
    `Retrieval, hard slice (${hard} questions with no content word in common with their evidence)`,
    table(
      ["mode", "scope", "recall@5", "recall@10", "recall@20", "MRR"],
      MODES.flatMap((mode) =>
        SCOPES.map((scope) => {
          const os = of(mode, scope, true)
          return [mode, scope, pct(recall(os, 5)), pct(recall(os, 10)), pct(recall(os, 20)), mrr(os).toFixed(3)]
        })
      )
    )
  )
  const searched = (q: Question) => q.searchedBefore > 0
  const calls = [...data.memoryCalls.values()].reduce((n, c) => n + c.size, 0)
  const slices: ReadonlyArray<readonly [string, (q: Question) => boolean]> = [
    ["issue 11's kinds", (q) => isOld(q) && !q.hard],
    ["issue 25's kinds", (q) => !isOld(q)]
  ]
  section(
    `Retrieval after earlier searches (${main.filter(searched).length} + ${newer.filter(searched).length} questions the model searched for 1–3 times before, in their session)`,
    table(
      ["kinds", "mode", "scope", "questions", "recall@1", "recall@5", "recall@10", "MRR", "first hit a memory call or result"],
      slices.flatMap(([kinds, is]) =>
        MODES.filter((m) => m !== "or-terms (ref.)").flatMap((mode) =>
          SCOPES.map((scope) => {
            const os = of(mode, scope).filter((o) => searched(o.question) && is(o.question))
            return [
              kinds,
              mode,
              scope,
              String(os.length),
              pct(recall(os, 1)),
              pct(recall(os, 5)),
              pct(recall(os, 10)),
              mrr(os).toFixed(3),
              `${os.filter((o) => o.firstIsMemoryCall).length} (${pct(os.filter((o) => o.firstIsMemoryCall).length / Math.max(1, os.length))})`
            ]
          })
        )
      )
    ),
    `${calls / 2} earlier lookups in ${data.memoryCalls.size} sessions (a memory search call with the question or its content words as the\n` +
      "query, and its result quoting the evidence or finding nothing). strict, lexical and context-aware leave the memory tool's own\n" +
      "calls and results out (the default); \"ranked + memory calls\" searches them too (includeMemoryCalls), as search did before issue 24."
  )
  const missRun: Mode = process.env["RETRIEVAL_MISSES"] === "ref" ? "or-terms (ref.)" : "context-aware"
  const missScope: ScopeName = process.env["RETRIEVAL_SCOPE"] === "user" ? "user" : "session"
  const misses = [...CATEGORIES, ...CONTEXT_CATEGORIES].flatMap((c) =>
    of(missRun, missScope)
      .filter((o) => o.question.category === c && (o.rank === null || o.rank > 10))
      .slice(0, Number(process.env["RETRIEVAL_MISS_COUNT"] ?? 2))
  )
  if (misses.length > 0) {
    print(`\nSample misses (${missRun}, ${missScope} scope, not in the top 10):`)
    for (const o of misses) {
      print(`- [${o.question.category}] "${o.question.text}": ${o.hits === 0 ? "no result" : `rank ${o.rank ?? "> 20"}, top hit "${o.top.slice(0, 80)}"`}`)
    }
  }
}
