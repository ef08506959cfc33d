/**
 * The sandbox caps (`sandbox.max_per_user`, `sandbox.max_total`) counted across the nodes of a
 * cluster (issue 28), in PostgreSQL: a row of `sandbox_containers` (migrations/pg/0017) per live
 * container, from its admission until it is removed. It behaves as the in-memory count
 * (./admission.ts) with the cluster's containers in place of one process's:
 *
 * - `admit` runs in one transaction under an advisory lock every node takes (admissions are one at a
 *   time cluster-wide, so a check and the row it guards are one step), counts this node's rows and
 *   those of nodes whose `cluster_nodes` row is fresh (written within STALE_SECONDS: a dead node's
 *   containers stop counting), refuses as the in-memory count does, then inserts. A database error
 *   refuses too (fails closed: the container is not started, the error says why).
 * - `release` deletes the row (a failure is logged; the next admission here puts this node's rows
 *   right: it deletes the ones of containers gone and writes back the ones missing).
 * - `enforce` (every command) reads the cluster's counts and, over a lowered cap, removes this node's
 *   own idle containers, least recently used first — another node's cannot be touched from here —
 *   and refuses when that is not enough. A database error there lets the command run (its container
 *   was counted when admitted) with a warning.
 *
 * At start the node deletes the rows left under its own id (it crashed); rows of nodes gone for
 * DEAD_ROWS_MINUTES are deleted when admitting. `live` and the gauge `anna_sandbox_containers` are
 * this node's own containers.
 */
import { deepestReason } from "../../domain/causeText.ts"
import { Cause, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Metrics from "../../domain/observability/metrics.ts"
import { SandboxFailure, SandboxLimitReached } from "../../domain/sandbox/errors.ts"
import type { SandboxCaps } from "../../domain/sandbox/types.ts"
import { STALE_SECONDS } from "../../services/NodeRegistry.ts"
import { type Admission, type Counts, SandboxAdmission, type Slot, victimsAmong } from "./admission.ts"

/** The advisory lock of admissions (any constant: "annasb" in ASCII, 48 bits). */
export const SANDBOX_LOCK = 0x616e6e617362

/** Rows of a node not seen for this long (or with no `cluster_nodes` row) are deleted when admitting. */
export const DEAD_ROWS_MINUTES = 10

/** Which cap a user's next container (`extra` 1) or current one (0) is beyond, as admission.ts says it. */
const beyond = (userId: string, caps: SandboxCaps, counts: Counts, extra: 0 | 1): SandboxLimitReached | undefined => {
  if (counts.total + extra > caps.total) return new SandboxLimitReached({ scope: "total", limit: caps.total })
  if (userId !== "" && counts.mine + extra > caps.perUser) return new SandboxLimitReached({ scope: "user", limit: caps.perUser })
  return undefined
}

export const make = (sql: SqlClient.SqlClient, nodeId: string): Effect.Effect<Admission> =>
  Effect.gen(function*() {
    // Rows under this node's id are a previous run's (it crashed): its containers went with it.
    yield* sql`DELETE FROM sandbox_containers WHERE node_id = ${nodeId}`.pipe(
      Effect.catchCause((c) => Effect.logWarning(`sandbox: could not clear this node's old container rows (${deepestReason(c)}); the first admission will`))
    )
    /** This node's live containers, and the ones being admitted now. */
    const slots = new Set<Slot>()
    const pending = new Set<Slot>()

    const counts = (userId: string) =>
      Effect.map(
        sql<{ total: number | string; mine: number | string }>`SELECT count(*) AS total, count(*) FILTER (WHERE s.user_id = ${userId}) AS mine
          FROM sandbox_containers s
          WHERE s.node_id = ${nodeId}
            OR EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.node_id = s.node_id AND n.seen_at > now() - make_interval(secs => ${STALE_SECONDS}))`,
        (rows): Counts => ({ total: Number(rows[0]?.total ?? 0), mine: Number(rows[0]?.mine ?? 0) })
      )
    const locked = <A, E, R>(self: Effect.Effect<A, E, R>) => sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${SANDBOX_LOCK})`, self))

    const admitted = (slot: Slot, caps: SandboxCaps) =>
      locked(Effect.gen(function*() {
        // This node's rows as it knows them: a row a failed release left is deleted; a row deleted
        // meanwhile (as a dead node's, while this one was frozen) is written back.
        const keep = JSON.stringify([...slots, ...pending].map((s) => s.id))
        const known = JSON.stringify([...slots].map((s) => ({ id: s.id, user: s.userId, workspace: s.workspace ?? null })))
        yield* sql`DELETE FROM sandbox_containers
          WHERE node_id = ${nodeId} AND slot_id NOT IN (SELECT jsonb_array_elements_text(${keep}::jsonb))`
        yield* sql`INSERT INTO sandbox_containers (node_id, slot_id, user_id, workspace)
          SELECT ${nodeId}, x->>'id', x->>'user', x->>'workspace' FROM jsonb_array_elements(${known}::jsonb) AS x
          ON CONFLICT DO NOTHING`
        yield* sql`DELETE FROM sandbox_containers s WHERE s.node_id <> ${nodeId}
          AND NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.node_id = s.node_id AND n.seen_at > now() - make_interval(mins => ${DEAD_ROWS_MINUTES}))`
        const over = beyond(slot.userId, caps, yield* counts(slot.userId), 1)
        // Refused: returned, not failed, so that the clean-up above commits.
        if (over !== undefined) return over
        yield* sql`INSERT INTO sandbox_containers (node_id, slot_id, user_id, workspace)
          VALUES (${nodeId}, ${slot.id}, ${slot.userId}, ${slot.workspace ?? null})`
        return undefined
      }))

    /** The cluster's counts for a command; undefined (and a warning) when they cannot be read. */
    const countsForCommand = (userId: string) =>
      counts(userId).pipe(
        Effect.catchCause((c) =>
          Effect.as(Effect.logWarning(`sandbox: could not read the cluster's live containers (${deepestReason(c)}); the command runs within the count made when its container started`), undefined)
        )
      )

    return {
      admit: (slot, caps) =>
        Effect.suspend(() => {
          pending.add(slot)
          return admitted(slot, caps).pipe(
            Effect.catch((e) =>
              Effect.fail(
                new SandboxFailure({
                  operation: "admission",
                  detail: `the cluster's live containers could not be counted in the database (${deepestReason(Cause.fail(e))}), so no container is started`
                })
              )
            ),
            Effect.onExit((exit) =>
              Effect.suspend(() => {
                pending.delete(slot)
                if (exit._tag === "Success" && exit.value === undefined) slots.add(slot)
                return Metrics.sandboxLive(slots.size)
              })
            ),
            Effect.flatMap((over) => (over === undefined ? Effect.void : Effect.fail(over)))
          )
        }),
      release: (slot) =>
        Effect.suspend(() => {
          slots.delete(slot)
          return Effect.andThen(
            Metrics.sandboxLive(slots.size),
            locked(sql`DELETE FROM sandbox_containers WHERE node_id = ${nodeId} AND slot_id = ${slot.id}`).pipe(
              Effect.catchCause((c) => Effect.logWarning(`sandbox: could not delete a removed container's row (${deepestReason(c)}); the next admission here will`))
            )
          )
        }),
      enforce: (self, caps) =>
        Effect.gen(function*() {
          const now = yield* countsForCommand(self.userId)
          if (now === undefined || beyond(self.userId, caps, now, 0) === undefined) return
          for (const v of victimsAmong(slots, self, caps, now)) {
            const removed = yield* v.evict
            if (removed) yield* Effect.logInfo(`sandbox: removed an idle container of ${v.userId || "the CLI"} (the live-container cap was lowered)`)
          }
          const after = yield* countsForCommand(self.userId)
          if (after === undefined) return
          const over = beyond(self.userId, caps, after, 0)
          if (over !== undefined) return yield* over
        }),
      live: Effect.sync(() => slots.size)
    } satisfies Admission
  })

/** `SandboxAdmission` for the cluster node `nodeId`, on anna's SqlClient (PostgreSQL). */
export const layer = (nodeId: string) =>
  Layer.effect(
    SandboxAdmission,
    Effect.gen(function*() {
      return yield* make(yield* SqlClient.SqlClient, nodeId)
    })
  )
