/**
 * The embedding worker (dense retrieval, issue 25): a background fiber of the gateway that embeds
 * the messages and summaries of every enabled agent that names an embedding model, so that the
 * ranked search can fuse the nearest vectors with its lexical ranking. Never part of a turn: a turn
 * stores its messages and goes on; the worker finds them later.
 *
 * - Resumable by construction: the work is "rows of the agent's sessions with no vector of its
 *   current model" (MemoryStore.pendingEmbeddings), newest first, so a restart (or a crash) goes on
 *   where the database says. A watermark per (agent, model, source), kept in memory only, spares
 *   re-reading the rows already found embedded; a restart starts it from 0 again (one scan).
 * - Batched: up to `batchSize` texts (64) per call, each cut to EMBED_CHARS characters.
 * - Rate-limited: at least `minIntervalMs` (250 ms) between two calls, whatever the agent; idle, it
 *   looks for new rows every `idleMs` (5 s).
 * - Backs off per agent on a failed call: `baseBackoffMs` (1 s) doubling up to `maxBackoffMs`
 *   (5 min), a warning logged each time; the other agents go on meanwhile. A spend guard refusal
 *   (the agent's summary limit, counted over its embedding calls: Embedder) waits `guardWaitMs` (1 min).
 * - A batch the provider refuses for its texts (HTTP 400: one text over the model's input limit,
 *   say) is tried again one text at a time; a text refused on its own is skipped (a warning names
 *   the row) until the gateway restarts, and the rows after it go on: one bad row never stops an
 *   agent's queue.
 * - A model change re-embeds: the new model's rows have no vector, so they are pending again; the
 *   old model's vectors are kept (export carries them) but no longer read.
 *
 * Uses MemoryStore, AgentStore and Embedder only (no SDK: the Embedder's layer has it).
 */
import { Clock, Effect, Layer } from "effect"
import { embeddingModelOf, formatModelRef, type ModelRef } from "../../domain/config/agent.ts"
import type { EmbeddingError } from "../../domain/memory/errors.ts"
import { embeddingText } from "../../domain/search/dense.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { Embedder } from "../../services/Embedder.ts"
import { MemoryStore, type PendingEmbedding, type VectorSource } from "../../services/MemoryStore.ts"

export interface WorkerOptions {
  readonly batchSize?: number | undefined
  readonly minIntervalMs?: number | undefined
  readonly idleMs?: number | undefined
  readonly baseBackoffMs?: number | undefined
  readonly maxBackoffMs?: number | undefined
  readonly guardWaitMs?: number | undefined
}

export const DEFAULTS = {
  batchSize: 64,
  minIntervalMs: 250,
  idleMs: 5_000,
  baseBackoffMs: 1_000,
  maxBackoffMs: 300_000,
  guardWaitMs: 60_000
} as const

const SOURCES: ReadonlyArray<VectorSource> = ["message", "summary"]

/** What one step did: embedded a batch, found nothing to do, or could not (every agent with work waits). */
export type StepResult =
  | { readonly _tag: "Embedded"; readonly agentId: string; readonly model: string; readonly rows: number }
  | { readonly _tag: "Idle" }

export const make = (options: WorkerOptions = {}) =>
  Effect.gen(function*() {
    const o = {
      batchSize: options.batchSize ?? DEFAULTS.batchSize,
      minIntervalMs: options.minIntervalMs ?? DEFAULTS.minIntervalMs,
      idleMs: options.idleMs ?? DEFAULTS.idleMs,
      baseBackoffMs: options.baseBackoffMs ?? DEFAULTS.baseBackoffMs,
      maxBackoffMs: options.maxBackoffMs ?? DEFAULTS.maxBackoffMs,
      guardWaitMs: options.guardWaitMs ?? DEFAULTS.guardWaitMs
    }
    const store = yield* MemoryStore
    const agents = yield* AgentStore
    const embedder = yield* Embedder
    /** Rows below this id are embedded already, per (agent, model, source). */
    const watermark = new Map<string, number>()
    /**
     * The sweep under way, per (agent, model, source): rows from `below` up to `ceiling` are embedded
     * (a sweep goes newest first, so each read starts below the last batch instead of skipping over
     * every row embedded so far: a long history costs linear, not quadratic, reads); once nothing is
     * pending below it, the watermark moves up to the ceiling read when the sweep began.
     */
    const sweeps = new Map<string, { readonly below: number; readonly ceiling: number }>()
    /** Per agent: no call before `until`; `delay` is the next failure's wait. */
    const waits = new Map<string, { readonly until: number; readonly delay: number }>()
    /** Rows whose text is empty once cut (blank space only): never sent, never pending again here. */
    const blank = new Set<string>()
    /** Rows the provider refused on their own (their text): skipped until the gateway restarts. */
    const refused = new Set<string>()
    /** Per agent: rows left to embed one at a time, after a batch refused for its texts (absent: none). */
    const singly = new Map<string, number>()
    const skipped = (r: { readonly source: VectorSource; readonly id: number }) => blank.has(`${r.source}:${r.id}`) || refused.has(`${r.source}:${r.id}`)
    const oneDone = (agentId: string) => {
      const left = (singly.get(agentId) ?? 0) - 1
      if (left > 0) singly.set(agentId, left)
      else singly.delete(agentId)
    }

    const backOff = (agentId: string, now: number, wait?: number) => {
      const delay = wait ?? Math.min(o.maxBackoffMs, waits.get(agentId)?.delay ?? o.baseBackoffMs)
      waits.set(agentId, { until: now + delay, delay: wait === undefined ? Math.min(o.maxBackoffMs, delay * 2) : o.baseBackoffMs })
      return delay
    }

    /** The next batch of one agent's model: pending rows, newest first, messages before summaries. */
    const nextBatch = (agentId: string, model: string) =>
      Effect.gen(function*() {
        for (const source of SOURCES) {
          const key = `${agentId}\u0000${model}\u0000${source}`
          const afterId = watermark.get(key) ?? 0
          const sweep = sweeps.get(key) ?? { below: Number.MAX_SAFE_INTEGER, ceiling: yield* store.embeddingCeiling(source) }
          const size = singly.has(agentId) ? 1 : o.batchSize
          const rows = (yield* store.pendingEmbeddings({
            agentId,
            model,
            source,
            afterId,
            beforeId: sweep.below,
            limit: size + blank.size + refused.size
          })).filter((r) => !skipped(r))
          const batch: Array<PendingEmbedding & { readonly input: string }> = []
          for (const r of rows) {
            const input = embeddingText(r.text)
            if (input === "") blank.add(`${r.source}:${r.id}`)
            else if (batch.length < size) batch.push({ ...r, input })
          }
          if (batch.length > 0) {
            // The next read starts below this batch; a batch that fails is read again (`below` stays).
            return { batch, next: () => sweeps.set(key, { below: Math.min(...batch.map((r) => r.id)), ceiling: sweep.ceiling }) }
          }
          // Nothing pending between the watermark and the sweep's lowest row: everything up to the ceiling
          // read when the sweep began is embedded; later rows have higher ids (the next sweep's).
          watermark.set(key, Math.max(afterId, sweep.ceiling))
          sweeps.delete(key)
        }
        return undefined
      })

    const embedBatch = (agentId: string, ref: ModelRef, batch: ReadonlyArray<PendingEmbedding & { readonly input: string }>) =>
      Effect.gen(function*() {
        const model = formatModelRef(ref)
        const sessions = new Set(batch.map((r) => r.sessionKey))
        const [only] = sessions
        const vectors = yield* embedder.embed({
          agentId,
          sessionKey: sessions.size === 1 && only !== undefined ? only : "",
          model: ref,
          texts: batch.map((r) => r.input)
        })
        yield* store.putVectors(model, batch.map((r, i) => ({ source: r.source, id: r.id, vector: vectors[i] ?? new Float32Array() })))
        waits.delete(agentId)
        return { _tag: "Embedded", agentId, model, rows: batch.length } as const
      })

    /** One batch for the first agent with work that is not waiting; Idle when there is none. */
    const step: Effect.Effect<StepResult> = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      for (const agent of yield* agents.list) {
        const ref = embeddingModelOf(agent)
        if (!agent.enabled || ref === undefined) continue
        if ((waits.get(agent.id)?.until ?? 0) > now) continue
        const model = formatModelRef(ref)
        // A batch refused for its texts is tried again at once, one text at a time (bounded: each
        // attempt either splits a batch or skips one text).
        for (let attempt = 0; attempt <= o.batchSize + 1; attempt++) {
          const next = yield* nextBatch(agent.id, model)
          if (next === undefined) break
          const result = yield* embedBatch(agent.id, ref, next.batch).pipe(
            Effect.tap(() => Effect.sync(() => {
              next.next()
              oneDone(agent.id)
            })),
            Effect.catchTags({
              EmbeddingGuardExceeded: (e) =>
                Effect.logInfo(`embedding: ${e.message}; waiting ${Math.round(o.guardWaitMs / 1000)} s`).pipe(
                  Effect.as(backOff(agent.id, now, o.guardWaitMs)),
                  Effect.as("wait" as const)
                ),
              EmbeddingError: (e) =>
                e.input !== true ? Effect.as(retryLater(agent.id, now, e), "wait" as const) : Effect.as(refusedTexts(agent.id, next.batch, e), "again" as const)
            })
          )
          if (result === "wait") break
          if (result !== "again") return result
        }
      }
      return { _tag: "Idle" } as const
    }).pipe(
      // A storage failure is logged and the loop goes on (the next step tries again).
      Effect.catch((e) => Effect.logWarning(`embedding: ${e.message}`).pipe(Effect.as({ _tag: "Idle" } as const)))
    )

    /** A failure not about the texts (a rate limit, a server error, a bad key): the agent waits, doubling. */
    const retryLater = (agentId: string, now: number, e: EmbeddingError) =>
      Effect.sync(() => backOff(agentId, now)).pipe(
        Effect.tap((delay) => Effect.logWarning(`embedding for agent ${agentId}: ${e.message}; trying again in ${Math.round(delay / 1000)} s`)),
        Effect.asVoid
      )

    /**
     * The provider refused a batch for its texts: a batch of several is tried again one text at a time
     * (the next steps), and a text refused on its own is skipped.
     */
    const refusedTexts = (agentId: string, batch: ReadonlyArray<PendingEmbedding>, e: EmbeddingError) =>
      Effect.gen(function*() {
        const [only] = batch
        if (batch.length > 1 || only === undefined) {
          singly.set(agentId, batch.length)
          yield* Effect.logWarning(`embedding for agent ${agentId}: ${e.message}; trying its ${batch.length} texts one at a time`)
          return
        }
        refused.add(`${only.source}:${only.id}`)
        oneDone(agentId)
        yield* Effect.logWarning(
          `embedding for agent ${agentId}: ${e.message}; skipping ${only.source} ${only.id} of ${only.sessionKey} (found by its words only)`
        )
      })

    /** Steps forever: `minIntervalMs` after a batch, `idleMs` when nothing could be done. */
    const loop = Effect.gen(function*() {
      while (true) {
        const r = yield* step
        yield* Effect.sleep(r._tag === "Embedded" ? o.minIntervalMs : o.idleMs)
      }
    })

    return { step, loop }
  })

/** The worker as a layer: its loop runs in the layer's scope (the gateway's). Needs MemoryStore, AgentStore, Embedder. */
export const layer = (options: WorkerOptions = {}) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const worker = yield* make(options)
    yield* Effect.forkScoped(worker.loop)
  }))
