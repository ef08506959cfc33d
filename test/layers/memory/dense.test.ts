/**
 * Dense retrieval (issue 25) over real SQLite files and the real Embedder (the openai SDK) talking
 * to the fake LLM server's /v1/embeddings: the worker embeds in batches, resumes from the database
 * after a restart, backs off on a 500, stops at the spend guard and re-embeds on a model change;
 * search fuses the dense side in (a row found by meaning alone), stays lexical in strict mode and
 * without an embedding model; vectors survive compaction and go with a deleted session.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import type { SearchScope } from "../../../src/domain/memory/types.ts"
import type { NewMessage } from "../../../src/domain/message.ts"
import { reciprocalRankFusion, vectorBase64, vectorFromBase64 } from "../../../src/domain/search/dense.ts"
import * as EmbeddingWorker from "../../../src/layers/memory/EmbeddingWorker.ts"
import * as SdkEmbedder from "../../../src/layers/providers/SdkEmbedder.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { Compactor } from "../../../src/services/Compactor.ts"
import { Embedder } from "../../../src/services/Embedder.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { UsageLog } from "../../../src/services/UsageLog.ts"
import { lcmTemp, modelStores } from "../../support/db.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { chat, T0 } from "../../support/memory.ts"
import { localProvider } from "../../support/runtimeStack.ts"

const suite = fakeLlmSuite()
const KEY = "a1:cli:ann:main"
const session: SearchScope = { _tag: "Session", sessionKey: KEY }
const MODEL = "local/fake-embed"

const stack = Layer.provideMerge(SdkEmbedder.layer, Layer.merge(lcmTemp, modelStores.pipe(Layer.provide(lcmTemp))))

const say = (texts: ReadonlyArray<string>, from = 0): Array<NewMessage> =>
  texts.map((content, i) => ({ role: (from + i) % 2 === 0 ? "user" : "assistant", content, createdAt: T0 + (from + i) * 60_000 }))

const put = (key: string, messages: ReadonlyArray<NewMessage>) =>
  Effect.flatMap(MemoryProvider, (memory) => memory.append(sessionRefFromKey(key), messages))

/** Provider `local` on the fake and agent a1 with the embedding model (or none). */
let since = 0
const setup = (embedding: boolean, guard: { readonly summaryMaxCalls?: number } = {}) =>
  Effect.gen(function*() {
    since = suite.fake.requests.length
    yield* (yield* ProviderStore).add(localProvider(suite.fake))
    yield* (yield* AgentStore).create("a1", {
      providerId: "local",
      model: "fake-large",
      ...(embedding ? { embeddingProviderId: "local", embeddingModel: "fake-embed" } : {}),
      ...guard
    })
  })

const vectorCount = (model = MODEL) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*) AS n FROM ctx_vectors WHERE model = ${model}`).pipe(
    Effect.map((rows) => rows[0]?.n ?? 0)
  )

/** This test's embedding requests (the fake records every test's). */
const embeddingRequests = () => suite.fake.requests.slice(since).filter((r) => r.path === "/v1/embeddings")

/** Steps the worker until it is idle (each step embeds at most one batch). */
const drain = (worker: { readonly step: Effect.Effect<EmbeddingWorker.StepResult> }) =>
  Effect.gen(function*() {
    const done: Array<EmbeddingWorker.StepResult> = []
    for (let i = 0; i < 100; i++) {
      const r = yield* worker.step
      if (r._tag === "Idle") return done
      done.push(r)
    }
    return done
  })

const DOC = [
  "We bought a new car last week, a blue one with a big trunk.",
  "The deploy failed again because the staging database was down.",
  "My cat sleeps on the keyboard every afternoon.",
  "The doctor said the knee needs rest for two weeks."
]

describe("dense vectors", () => {
  it("reciprocal-rank fusion and the vector codec", () => {
    const fused = reciprocalRankFusion([["a", "b", "c"], ["c", "d"]])
    // c is in both lists: it beats b (second of one list) and a (first of one list)
    assert.deepStrictEqual(fused.map((f) => f.key), ["c", "a", "b", "d"])
    assert.closeTo(fused[0]?.score ?? 0, 1 / 63 + 1 / 61, 1e-12)
    const v = Float32Array.from([0.5, -1.25, 3])
    assert.deepStrictEqual(Array.from(vectorFromBase64(vectorBase64(v)) ?? []), [0.5, -1.25, 3])
    assert.strictEqual(vectorFromBase64("abc"), undefined)
  })

  it.effect("the worker embeds in batches through the fake; search then finds a row by meaning alone", () =>
    Effect.gen(function*() {
      yield* setup(true)
      yield* put(KEY, [...say(DOC), ...chat(6, 4)])
      const worker = yield* EmbeddingWorker.make({ batchSize: 4 })
      const steps = yield* drain(worker)
      // 10 messages in batches of 4: 4 + 4 + 2, newest first
      assert.deepStrictEqual(steps.map((s) => (s._tag === "Embedded" ? s.rows : 0)), [4, 4, 2])
      assert.strictEqual(yield* vectorCount(), 10)
      const reqs = embeddingRequests()
      assert.strictEqual(reqs.length, 3)
      assert.deepStrictEqual((reqs[0]?.body as { input: Array<string> } | undefined)?.input.length, 4)
      // the SDK's default wire format, which the fake answers
      assert.strictEqual((reqs[0]?.body as { encoding_format: string } | undefined)?.encoding_format, "base64")
      // usage recorded as embedding calls of the agent
      const totals = yield* (yield* UsageLog).totals({ agentId: "a1" })
      const embedding = totals.find((t) => t.purpose === "embedding")
      assert.strictEqual(embedding?.calls, 3)
      assert.isAbove(embedding?.inputTokens ?? 0, 0)

      // "automobile" shares no word with "car": lexically nothing, by meaning the car message
      const searcher = yield* Searcher
      assert.deepStrictEqual(yield* searcher.search("automobile", { scope: session }), [])
      const dense = yield* (yield* Embedder).queryVector("a1", "automobile")
      assert.strictEqual(dense?.model, MODEL)
      assert.strictEqual(embeddingRequests().length, 4)
      const hits = yield* searcher.search("automobile", { scope: session, ...(dense === undefined ? {} : { dense }) })
      assert.strictEqual(hits[0]?.seq, 1)
      assert.include(hits[0]?.snippet ?? "", "new car")
      assert.deepStrictEqual(hits[0]?.matched, [])
      assert.closeTo(hits[0]?.similarity ?? 0, 0.33, 0.2)
      // a query with a lexical match too: both sides agree on the doctor message, fused first
      const q = yield* (yield* Embedder).queryVector("a1", "physician knee")
      const both = yield* searcher.search("physician knee", { scope: session, ...(q === undefined ? {} : { dense: q }) })
      assert.strictEqual(both[0]?.seq, 4)
      assert.deepStrictEqual(both[0]?.matched, ["knee"])
      assert.isDefined(both[0]?.similarity)
      // strict mode stays lexical: the vector is ignored
      const strict = yield* searcher.search("automobile", { scope: session, mode: "strict", ...(dense === undefined ? {} : { dense }) })
      assert.deepStrictEqual(strict, [])
      // another session's vectors are out of scope
      const other = yield* searcher.search("automobile", { scope: { _tag: "Session", sessionKey: "a1:cli:bob:main" }, ...(dense === undefined ? {} : { dense }) })
      assert.deepStrictEqual(other, [])
    }).pipe(Effect.provide(stack)))

  it.effect("a sweep reads below its last batch (linear in a long history); rows added meanwhile wait for the next sweep, each embedded once", () =>
    Effect.gen(function*() {
      yield* setup(true)
      yield* put(KEY, chat(10))
      const store = yield* MemoryStore
      const reads: Array<{ readonly source: string; readonly afterId: number; readonly beforeId: number | undefined }> = []
      const spy = MemoryStore.of({
        ...store,
        pendingEmbeddings: (r) => {
          reads.push({ source: r.source, afterId: r.afterId, beforeId: r.beforeId })
          return store.pendingEmbeddings(r)
        }
      })
      const worker = yield* EmbeddingWorker.make({ batchSize: 4 }).pipe(Effect.provideService(MemoryStore, spy))
      const first = yield* worker.step
      assert.strictEqual(first._tag, "Embedded")
      yield* put(KEY, chat(3, 10)) // ids 11–13, newer than the sweep's ceiling
      const rest = yield* drain(worker)
      assert.deepStrictEqual([first, ...rest].map((s) => (s._tag === "Embedded" ? s.rows : 0)), [4, 4, 2])
      // the worker's next round (after its idle wait in the loop) starts a new sweep from the top
      const later = yield* drain(worker)
      assert.deepStrictEqual(later.map((s) => (s._tag === "Embedded" ? s.rows : 0)), [3])
      assert.strictEqual(yield* vectorCount(), 13)
      const inputs = embeddingRequests().flatMap((r) => (r.body as { input: Array<string> }).input)
      assert.strictEqual(new Set(inputs).size, 13, "a row embedded twice")
      const messages = reads.filter((r) => r.source === "message")
      // the first sweep: from the top, then below each batch (10..7, 6..3, 2..1), then nothing below 1
      assert.deepStrictEqual(messages.slice(0, 4).map((r) => [r.afterId, r.beforeId]), [
        [0, Number.MAX_SAFE_INTEGER],
        [0, 7],
        [0, 3],
        [0, 1]
      ])
      // the next sweep starts above the first one's ceiling (10) and finds 11–13
      assert.deepStrictEqual(messages.slice(4, 6).map((r) => [r.afterId, r.beforeId]), [[10, Number.MAX_SAFE_INTEGER], [10, 11]])
    }).pipe(Effect.provide(stack)))

  it.effect("without an embedding model nothing changes: no call, no vector, the same hits", () =>
    Effect.gen(function*() {
      yield* setup(false)
      yield* put(KEY, say(DOC))
      const worker = yield* EmbeddingWorker.make({ batchSize: 4 })
      assert.deepStrictEqual(yield* drain(worker), [])
      assert.strictEqual(yield* (yield* Embedder).queryVector("a1", "car staging"), undefined)
      assert.strictEqual(embeddingRequests().length, 0)
      assert.strictEqual(yield* vectorCount(), 0)
      const searcher = yield* Searcher
      const hits = yield* searcher.search("staging database", { scope: session })
      assert.strictEqual(hits[0]?.seq, 2)
      assert.isUndefined(hits[0]?.similarity)
    }).pipe(Effect.provide(stack)))

  it.effect("resumes from the database after a restart: a new worker embeds only what is left", () =>
    Effect.gen(function*() {
      yield* setup(true)
      yield* put(KEY, chat(10))
      const first = yield* EmbeddingWorker.make({ batchSize: 4 })
      const r = yield* first.step
      assert.strictEqual(r._tag === "Embedded" ? r.rows : 0, 4)
      // "crash": the first worker is dropped; a second one starts from what the database holds
      const second = yield* EmbeddingWorker.make({ batchSize: 4 })
      const steps = yield* drain(second)
      assert.deepStrictEqual(steps.map((s) => (s._tag === "Embedded" ? s.rows : 0)), [4, 2])
      assert.strictEqual(yield* vectorCount(), 10)
      // every row was sent once
      const sent = embeddingRequests().flatMap((q) => (q.body as { input: Array<string> }).input)
      assert.strictEqual(sent.length, 10)
      assert.strictEqual(new Set(sent).size, 10)
      // new messages later: picked up above the watermark
      yield* put(KEY, chat(3, 10))
      assert.deepStrictEqual((yield* drain(second)).map((s) => (s._tag === "Embedded" ? s.rows : 0)), [3])
      assert.strictEqual(yield* vectorCount(), 13)
    }).pipe(Effect.provide(stack)))

  it.effect("backs off on a 500 and embeds once the fake answers again", () =>
    Effect.gen(function*() {
      yield* setup(true)
      yield* put(KEY, chat(3))
      suite.fake.failEmbeddings(1, 500)
      const worker = yield* EmbeddingWorker.make({ batchSize: 4, baseBackoffMs: 60_000 })
      // the failed call: nothing stored, the agent waits (its next step is idle, no request)
      assert.strictEqual((yield* worker.step)._tag, "Idle")
      assert.strictEqual(embeddingRequests().length, 1)
      assert.strictEqual((yield* worker.step)._tag, "Idle")
      assert.strictEqual(embeddingRequests().length, 1)
      assert.strictEqual(yield* vectorCount(), 0)
      // the failure is recorded as a failed embedding call
      const failed = (yield* (yield* UsageLog).totals({ agentId: "a1" })).find((t) => t.purpose === "embedding")
      assert.strictEqual(failed?.failed, 1)
      // a worker without the wait (as after the backoff) succeeds
      const again = yield* EmbeddingWorker.make({ batchSize: 4 })
      assert.deepStrictEqual((yield* drain(again)).map((s) => (s._tag === "Embedded" ? s.rows : 0)), [3])
      assert.strictEqual(yield* vectorCount(), 3)
    }).pipe(Effect.provide(stack)))

  it.effect("a text the provider refuses (HTTP 400) is skipped alone: the rest of its batch and the rows after it are embedded", () =>
    Effect.gen(function*() {
      yield* setup(true)
      const texts = Array.from({ length: 7 }, (_, i) => (i === 3 ? "this one is POISON for the model" : `ordinary message ${i}`))
      yield* put(KEY, texts.map((content, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content, createdAt: T0 + i * 1000 })))
      suite.fake.refuseEmbeddingsOf("POISON")
      try {
        const worker = yield* EmbeddingWorker.make({ batchSize: 4 })
        const steps = yield* drain(worker)
        // every row but the refused one has its vector (drain stops at the first idle step: not stuck)
        assert.strictEqual(yield* vectorCount(), 6)
        assert.strictEqual(steps.reduce((n, r) => n + (r._tag === "Embedded" ? r.rows : 0), 0), 6)
        // and it asked for the refused text alone once, not in a loop
        const alone = embeddingRequests().filter((r) => {
          const input = (r.body as { input?: unknown }).input
          return Array.isArray(input) && input.length === 1 && String(input[0]).includes("POISON")
        })
        assert.strictEqual(alone.length, 1)
        assert.strictEqual((yield* worker.step)._tag, "Idle")
      } finally {
        suite.fake.refuseEmbeddingsOf(undefined)
      }
    }).pipe(Effect.provide(stack)))

  it.effect("the spend guard stops the worker: no call past the agent's limit", () =>
    Effect.gen(function*() {
      yield* setup(true, { summaryMaxCalls: 2 })
      yield* put(KEY, chat(10))
      const worker = yield* EmbeddingWorker.make({ batchSize: 2 })
      const steps = yield* drain(worker)
      assert.strictEqual(steps.length, 2)
      assert.strictEqual(embeddingRequests().length, 2)
      assert.strictEqual(yield* vectorCount(), 4)
      const refused = yield* (yield* Embedder).embed({ agentId: "a1", sessionKey: "", model: { providerId: "local", model: "fake-embed" }, texts: ["x"] }).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "EmbeddingGuardExceeded")
      assert.strictEqual(embeddingRequests().length, 2)
    }).pipe(Effect.provide(stack)))

  it.effect("a model change re-embeds with the new model; search reads only the agent's current model", () =>
    Effect.gen(function*() {
      yield* setup(true)
      yield* put(KEY, say(DOC))
      const worker = yield* EmbeddingWorker.make({ batchSize: 8 })
      yield* drain(worker)
      assert.strictEqual(yield* vectorCount(), 4)
      yield* (yield* AgentStore).update("a1", { embeddingProviderId: "local", embeddingModel: "fake-embed-2" })
      assert.strictEqual(yield* (yield* Embedder).queryVector("a1", "automobile"), undefined)
      const steps = yield* drain(worker)
      assert.deepStrictEqual(steps.map((s) => (s._tag === "Embedded" ? s.model : "")), ["local/fake-embed-2"])
      assert.strictEqual(yield* vectorCount("local/fake-embed-2"), 4)
      assert.strictEqual((embeddingRequests().at(-1)?.body as { model: string } | undefined)?.model, "fake-embed-2")
      const dense = yield* (yield* Embedder).queryVector("a1", "automobile")
      assert.strictEqual(dense?.model, "local/fake-embed-2")
    }).pipe(Effect.provide(stack)))

  it.effect("vectors survive compaction (messages are never deleted) and summaries are embedded too; a deleted session takes its vectors", () =>
    Effect.gen(function*() {
      yield* setup(true)
      yield* put(KEY, chat(40))
      const worker = yield* EmbeddingWorker.make({ batchSize: 64 })
      yield* drain(worker)
      assert.strictEqual(yield* vectorCount(), 40)
      const report = yield* (yield* Compactor).compact(KEY, { full: true, budget: 400, freshTail: 4 })
      assert.isTrue(report.compacted)
      assert.strictEqual(yield* vectorCount(), 40 + 0)
      const sql = yield* SqlClient.SqlClient
      const messagesWithVectors = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_vectors WHERE source = 'message'`
      assert.strictEqual(messagesWithVectors[0]?.n, 40)
      // the summaries compaction wrote are embedded next
      yield* drain(worker)
      const summaries = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_summaries`
      const summaryVectors = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_vectors WHERE source = 'summary'`
      assert.isAbove(summaries[0]?.n ?? 0, 0)
      assert.strictEqual(summaryVectors[0]?.n, summaries[0]?.n)
      yield* (yield* MemoryStore).deleteConversation(KEY)
      const left = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ctx_vectors`
      assert.strictEqual(left[0]?.n, 0)
    }).pipe(Effect.provide(stack)))
})
