/**
 * Idempotent turns on the HTTP channel (issue 28): the claims and stored answers of requests sent
 * with an `Idempotency-Key` header, in `http_turns` (migrations/0033_http_turns.sql).
 *
 * A request claims (user, key) before its turn runs. A retry with the same key and the same request
 * body then gets the first one's answer replayed (the same completion, id included) once it is done,
 * or 409 while it is still being answered; with another body, 422 (a key names one request). The
 * claim is in the database, so it holds across a restart and across gateways sharing a PostgreSQL
 * database. A turn that failed gives its claim back (a retry runs it afresh); a claim whose gateway
 * died is taken over once the turn's deadline has passed — on a cluster as soon as the node that holds
 * it is gone (its `cluster_nodes` row not written for STALE_SECONDS). Claims and answers are kept a day.
 */
import { Effect, Schema } from "effect"
import { randomUUID } from "node:crypto"
import type { SqlClient } from "effect/sql"
import * as Sqlite from "../../sql/Sqlite.ts"
import { STALE_SECONDS } from "../../../services/NodeRegistry.ts"
import type { CompletionMeta, WireEvent } from "./openaiWire.ts"

/** How long a key and its answer are kept (as Stripe and the IETF draft suggest: a day). */
export const KEEP_MS = 24 * 60 * 60 * 1000

/** The longest key accepted (the IETF draft sets none; UUIDs are 36). */
export const MAX_KEY_LENGTH = 255

/** Why `key` cannot be an idempotency key, or undefined. */
export const keyProblem = (key: string): string | undefined =>
  key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)
    ? `The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters (a UUID, say).`
    : undefined

/** What a done turn's retry replays: the completion's identity and the turn's answer events. */
export interface StoredAnswer {
  readonly meta: CompletionMeta
  readonly events: ReadonlyArray<WireEvent>
}

const Answer = Schema.fromJsonString(Schema.Struct({
  meta: Schema.Struct({ id: Schema.String, created: Schema.Number, model: Schema.String }),
  events: Schema.Array(Schema.Unknown)
}))
const decodeAnswer = Schema.decodeUnknownResult(Answer)

export type Claim =
  /** This request's to answer; `id` fences what it stores (a claim taken over is no longer its). */
  | { readonly _tag: "Claimed"; readonly id: string }
  | { readonly _tag: "Replay"; readonly answer: StoredAnswer }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Mismatch" }

/** The events a replay needs: the answer's text and notices, and the turn's end. */
export const replayable = (event: WireEvent): boolean => event.type === "text" || event.type === "notice" || event.type === "done"

/** `nodeId`: this gateway's node id on a cluster (its claims carry it), else undefined. */
export const make = (sql: SqlClient.SqlClient, nodeId?: string | undefined) => {
  const immediate = Sqlite.immediate(sql)
  /** Whether the node holding a claim is up (no node: a single gateway's claim, up until its deadline). */
  const holderUp = (holder: string | null) =>
    holder === null || holder === nodeId
      ? Effect.succeed(true)
      : Effect.map(
        sql<{ up: number }>`SELECT 1 AS up FROM cluster_nodes WHERE node_id = ${holder} AND seen_at > now() - make_interval(secs => ${STALE_SECONDS})`,
        (rows) => rows.length > 0
      )

  /** Claims (user, key) for a request whose body hashes to `requestHash`, its turn due by `expiresAt`. */
  const claim = Effect.fn("HttpTurns.claim")(function*(userId: string, key: string, requestHash: string, now: number, expiresAt: number) {
    return yield* immediate(Effect.gen(function*() {
      yield* sql`DELETE FROM http_turns WHERE created_at <= ${now - KEEP_MS}`
      const rows = yield* sql<{ request_hash: string; state: string; answer: string | null; expires_at: number; node_id: string | null }>`SELECT
          request_hash, state, answer, expires_at, node_id FROM http_turns WHERE user_id = ${userId} AND idempotency_key = ${key}`
      const row = rows[0]
      if (row !== undefined && row.request_hash !== requestHash) return { _tag: "Mismatch" } as const
      if (row !== undefined && row.state === "done") {
        const answer = decodeAnswer(row.answer)
        if (answer._tag === "Success") return { _tag: "Replay", answer: answer.success as StoredAnswer } as const
      }
      if (row !== undefined && row.state === "running" && row.expires_at > now && (yield* holderUp(row.node_id))) return { _tag: "Running" } as const
      // New, or abandoned by a gateway that died (its deadline passed, or its cluster node is gone), or an
      // answer that no longer reads: this request's now.
      yield* sql`DELETE FROM http_turns WHERE user_id = ${userId} AND idempotency_key = ${key}`
      const id = randomUUID()
      yield* sql`INSERT INTO http_turns (user_id, idempotency_key, request_hash, claim, state, answer, created_at, expires_at, node_id)
        VALUES (${userId}, ${key}, ${requestHash}, ${id}, 'running', NULL, ${now}, ${expiresAt}, ${nodeId ?? null})`
      return { _tag: "Claimed", id } as const
    }))
  })

  /** Claim `claim`'s turn is done: its answer is what retries get (unless the claim was taken over meanwhile). */
  const finish = Effect.fn("HttpTurns.finish")(function*(userId: string, key: string, claim: string, answer: StoredAnswer) {
    yield* sql`UPDATE http_turns SET state = 'done', answer = ${JSON.stringify(answer)}
      WHERE user_id = ${userId} AND idempotency_key = ${key} AND claim = ${claim} AND state = 'running'`
  })

  /** Claim `claim`'s turn failed (or was cut off): the key is free for a retry. */
  const release = Effect.fn("HttpTurns.release")(function*(userId: string, key: string, claim: string) {
    yield* sql`DELETE FROM http_turns WHERE user_id = ${userId} AND idempotency_key = ${key} AND claim = ${claim} AND state = 'running'`
  })

  return { claim, finish, release }
}
