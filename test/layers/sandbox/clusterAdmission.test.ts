/**
 * The sandbox caps across a cluster's nodes (issue 28, src/layers/sandbox/clusterAdmission.ts), on a
 * real PostgreSQL: two nodes' admissions on one database count each other's containers — per user and
 * in all, also when both admit at once — a release frees a place, a node whose `cluster_nodes` row went
 * stale stops counting (and its rows go once it has been gone for long), a lowered cap evicts this
 * node's idle containers least recently used first and refuses when the other node's keep it over, a
 * node's leftover rows are cleared when it starts, and a database that cannot be read refuses the
 * container. Without PostgreSQL: the Docker sandbox counts with `SandboxAdmission` when it is set.
 */
import { assert, describe, it } from "@effect/vitest"
import type Docker from "dockerode"
import { Effect, Layer, Metric } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as Metrics from "../../../src/domain/observability/metrics.ts"
import type { SandboxFailure, SandboxLimitReached } from "../../../src/domain/sandbox/errors.ts"
import type { SandboxCaps } from "../../../src/domain/sandbox/types.ts"
import * as Admission from "../../../src/layers/sandbox/admission.ts"
import * as ClusterAdmission from "../../../src/layers/sandbox/clusterAdmission.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import * as Postgres from "../../../src/layers/sql/Postgres.ts"
import { STALE_SECONDS } from "../../../src/services/NodeRegistry.ts"
import { Sandbox } from "../../../src/services/Sandbox.ts"
import { onRealClock } from "../../support/db.ts"
import { pgTemp, postgresEnabled, tempDatabaseUrl } from "../../support/postgres.ts"

/** A container of `userId`; its eviction (when idle) releases it, as the Docker sandbox's scope does. */
const slotOf = (admission: () => Admission.Admission, userId: string, lastUsed = 0): Admission.Slot & { evicted: boolean } => {
  const slot: Admission.Slot & { evicted: boolean } = {
    id: randomUUID(),
    workspace: `/tmp/ws/${userId}`,
    userId,
    lastUsed,
    busy: 0,
    evicted: false,
    evict: Effect.suspend(() => {
      if (slot.busy > 0) return Effect.succeed(false)
      slot.evicted = true
      return Effect.as(admission().release(slot), true)
    })
  }
  return slot
}

// Enough of an engine for the sandbox's start (its orphan clean-up lists no container).
const engine = { listContainers: () => Promise.resolve([]) } as unknown as Docker

/** Nodes a and b, both up (their `cluster_nodes` rows just written). */
const twoNodes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO cluster_nodes (node_id, address, version) VALUES ('node-a', '10.0.0.1:1', 't'), ('node-b', '10.0.0.2:1', 't')`
  const a = yield* ClusterAdmission.make(sql, "node-a")
  const b = yield* ClusterAdmission.make(sql, "node-b")
  const onA = (userId: string, lastUsed = 0) => slotOf(() => a, userId, lastUsed)
  const onB = (userId: string, lastUsed = 0) => slotOf(() => b, userId, lastUsed)
  const rows = (nodeId: string) =>
    Effect.map(sql<{ n: number }>`SELECT count(*) AS n FROM sandbox_containers WHERE node_id = ${nodeId}`, (r) => Number(r[0]?.n ?? 0))
  return { sql, a, b, onA, onB, rows }
})

/** What a refusal says: the cap's scope and limit (or the error's tag). */
const refusal = (e: SandboxLimitReached | SandboxFailure) => (e._tag === "SandboxLimitReached" ? { scope: e.scope, limit: e.limit } : e._tag)

const gauge = Effect.map(Metric.value(Metric.withAttributes(Metrics.sandboxContainers, {})), (s) => s.value)

if (postgresEnabled()) {
  describe("sandbox admission across a cluster (PostgreSQL)", () => {
    it.effect("the per-user and total caps count both nodes' containers; a release frees a place", () =>
      Effect.gen(function*() {
        const { a, b, onA, onB, rows } = yield* twoNodes
        const caps: SandboxCaps = { perUser: 2, total: 3 }
        yield* a.admit(onA("u1"), caps)
        yield* b.admit(onB("u1"), caps)
        // u1 has two, one on each node: a third is refused on either.
        assert.deepStrictEqual(refusal(yield* Effect.flip(b.admit(onB("u1"), caps))), { scope: "user", limit: 2 })
        assert.deepStrictEqual(refusal(yield* Effect.flip(a.admit(onA("u1"), caps))), { scope: "user", limit: 2 })
        const u2 = onA("u2")
        yield* a.admit(u2, caps)
        // Three in all (two on a, one on b): b refuses a fourth, whoever's.
        assert.deepStrictEqual(refusal(yield* Effect.flip(b.admit(onB("u3"), caps))), { scope: "total", limit: 3 })
        // Nobody in particular ('' — the CLI) counts in the total.
        assert.deepStrictEqual(refusal(yield* Effect.flip(b.admit(onB(""), caps))), { scope: "total", limit: 3 })
        assert.strictEqual(yield* a.live, 2)
        assert.strictEqual(yield* b.live, 1)
        assert.deepStrictEqual([yield* rows("node-a"), yield* rows("node-b")], [2, 1])
        // a's u2 container goes: b's next one fits.
        yield* a.release(u2)
        assert.strictEqual(yield* a.live, 1)
        yield* b.admit(onB("u3"), caps)
        assert.deepStrictEqual([yield* rows("node-a"), yield* rows("node-b")], [1, 2])
      }).pipe(Effect.provide(pgTemp)))

    it.effect("admissions from both nodes at once never pass the caps", () =>
      Effect.gen(function*() {
        const { a, b, onA, onB, sql } = yield* twoNodes
        const caps: SandboxCaps = { perUser: 3, total: 10 }
        const tryAdmit = (admission: Admission.Admission, slot: Admission.Slot) =>
          admission.admit(slot, caps).pipe(
            Effect.as("admitted"),
            Effect.catch((e) => Effect.succeed(e._tag === "SandboxLimitReached" ? e.scope : e._tag))
          )
        // Twelve of u1's at once, six from each node: three get in.
        const sameUser = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? tryAdmit(a, onA("u1")) : tryAdmit(b, onB("u1")))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(sameUser.filter((r) => r === "admitted").length, 3)
        assert.strictEqual(sameUser.filter((r) => r === "user").length, 9)
        // Sixteen users' at once: the seven places left are taken, no more.
        const many = yield* Effect.all(
          Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? tryAdmit(a, onA(`v${i}`)) : tryAdmit(b, onB(`v${i}`)))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(many.filter((r) => r === "admitted").length, 7)
        assert.strictEqual(many.filter((r) => r === "total").length, 9)
        const [total] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM sandbox_containers`
        assert.strictEqual(Number(total?.n), 10)
        assert.strictEqual((yield* a.live) + (yield* b.live), 10)
      }).pipe(Effect.provide(pgTemp)))

    it.effect("a node whose cluster_nodes row went stale no longer counts; its rows go once it has been gone for long", () =>
      Effect.gen(function*() {
        const { sql, a, b, onA, onB, rows } = yield* twoNodes
        const caps: SandboxCaps = { perUser: 5, total: 2 }
        yield* b.admit(onB("u1"), caps)
        yield* b.admit(onB("u2"), caps)
        assert.deepStrictEqual(refusal(yield* Effect.flip(a.admit(onA("u3"), caps))), { scope: "total", limit: 2 })
        // b stops writing its row (it died): past STALE_SECONDS its containers do not count.
        yield* sql`UPDATE cluster_nodes SET seen_at = now() - make_interval(secs => ${STALE_SECONDS + 1}) WHERE node_id = 'node-b'`
        yield* a.admit(onA("u3"), caps)
        // Its rows stay a while (it may only be frozen)…
        assert.strictEqual(yield* rows("node-b"), 2)
        // …and go with the next admission once it has been gone for DEAD_ROWS_MINUTES.
        yield* sql`UPDATE cluster_nodes SET seen_at = now() - make_interval(mins => ${ClusterAdmission.DEAD_ROWS_MINUTES + 1}) WHERE node_id = 'node-b'`
        yield* a.admit(onA("u4"), caps)
        assert.strictEqual(yield* rows("node-b"), 0)
        assert.strictEqual(yield* rows("node-a"), 2)
        // b comes back (its row fresh again): its next admission writes its live containers back, and counts them.
        yield* sql`UPDATE cluster_nodes SET seen_at = now() WHERE node_id = 'node-b'`
        assert.deepStrictEqual(refusal(yield* Effect.flip(b.admit(onB("u5"), { perUser: 5, total: 4 }))), { scope: "total", limit: 4 })
        assert.strictEqual(yield* rows("node-b"), 2)
      }).pipe(Effect.provide(pgTemp)))

    it.effect("a lowered cap evicts this node's idle containers, least recently used first, and refuses when the other node's keep it over", () =>
      Effect.gen(function*() {
        const { a, b, onA, onB, rows } = yield* twoNodes
        const wide: SandboxCaps = { perUser: 5, total: 5 }
        const s1 = onA("u1", 1)
        const s2 = onA("u1", 2)
        const self = onA("u1", 3)
        for (const s of [s1, s2, self]) yield* a.admit(s, wide)
        self.busy = 1
        const t1 = onB("u2", 0)
        const t2 = onB("u1", 0)
        for (const t of [t1, t2]) yield* b.admit(t, wide)
        // Five in all (three on a, two on b); lowered to four: a's least recently used idle one goes.
        yield* a.enforce(self, { perUser: 5, total: 4 })
        assert.deepStrictEqual([s1.evicted, s2.evicted, self.evicted], [true, false, false])
        assert.strictEqual(yield* a.live, 2)
        // u1 has three (s2 and self on a, one on b): lowered to one per user, a's idle s2 goes, and
        // b's u1 container (not a's to remove) keeps u1 over: the command is refused.
        assert.deepStrictEqual(refusal(yield* Effect.flip(a.enforce(self, { perUser: 1, total: 5 }))), { scope: "user", limit: 1 })
        assert.isTrue(s2.evicted)
        // Lowered to two in all: nothing of a's is idle any more, b's two keep it over.
        assert.deepStrictEqual(refusal(yield* Effect.flip(a.enforce(self, { perUser: 5, total: 2 }))), { scope: "total", limit: 2 })
        assert.deepStrictEqual([t1.evicted, t2.evicted, self.evicted], [false, false, false])
        assert.deepStrictEqual([yield* rows("node-a"), yield* rows("node-b")], [1, 2])
        // Within the caps: nothing happens.
        yield* a.enforce(self, wide)
        assert.strictEqual(yield* a.live, 1)
      }).pipe(Effect.provide(pgTemp)))

    it.effect("a node clears its leftover rows at start and rows its releases missed at the next admission; the gauge is its own count", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO cluster_nodes (node_id, address, version) VALUES ('node-a', '10.0.0.1:1', 't'), ('node-b', '10.0.0.2:1', 't')`
        // node-a crashed with two containers; node-b runs one.
        yield* sql`INSERT INTO sandbox_containers (node_id, slot_id, user_id) VALUES ('node-a', 'old-1', 'u1'), ('node-a', 'old-2', ''), ('node-b', 'b-1', 'u1')`
        const a = yield* ClusterAdmission.make(sql, "node-a")
        const left = yield* sql<{ node_id: string; slot_id: string }>`SELECT node_id, slot_id FROM sandbox_containers ORDER BY node_id, slot_id`
        assert.deepStrictEqual(left.map((r) => `${r.node_id}/${r.slot_id}`), ["node-b/b-1"])
        const caps: SandboxCaps = { perUser: 2, total: 3 }
        const first = slotOf(() => a, "u1")
        yield* a.admit(first, caps)
        assert.strictEqual(yield* gauge, 1)
        // A row this node no longer has a container for (its release could not reach the database):
        // gone with the next admission, which it would otherwise have refused (three in all).
        yield* sql`INSERT INTO sandbox_containers (node_id, slot_id, user_id) VALUES ('node-a', 'stray', 'u1')`
        yield* a.admit(slotOf(() => a, "u2"), caps)
        const now = yield* sql<{ slot_id: string }>`SELECT slot_id FROM sandbox_containers WHERE node_id = 'node-a'`
        assert.notInclude(now.map((r) => r.slot_id), "stray")
        assert.include(now.map((r) => r.slot_id), first.id)
        assert.strictEqual(now.length, 2)
        assert.strictEqual(yield* gauge, 2)
      }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()), Effect.provide(pgTemp)))

    it.effect("a database that cannot be read refuses the container (fails closed); a command's check lets it run", () =>
      Effect.gen(function*() {
        const { sql, a, onA } = yield* twoNodes
        const caps: SandboxCaps = { perUser: 2, total: 3 }
        const running = onA("u1")
        yield* a.admit(running, caps)
        yield* sql`ALTER TABLE sandbox_containers RENAME TO sandbox_containers_gone`
        const e = yield* Effect.flip(a.admit(onA("u2"), caps))
        assert.strictEqual(e._tag, "SandboxFailure")
        assert.include(e.message, "could not be counted")
        assert.strictEqual(yield* a.live, 1)
        // The running container's commands go on; its removal is logged, not failed.
        yield* a.enforce(running, { perUser: 1, total: 1 })
        yield* a.release(running)
        assert.strictEqual(yield* a.live, 0)
      }).pipe(Effect.provide(pgTemp)))

    it.effect("composed as a cluster node's runtime is (src/programs/layers.ts), the sandbox counts in PostgreSQL under the node's id", () =>
      Effect.gen(function*() {
        const database = onRealClock(Postgres.layer(yield* tempDatabaseUrl, { maxConnections: 2 }))
        // node-a crashed with a container: its row is cleared when its sandbox starts.
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO sandbox_containers (node_id, slot_id, user_id) VALUES ('node-a', 'old', 'u1'), ('node-b', 'b-1', 'u1')`
        }).pipe(Effect.provide(database))
        let seen: Admission.Admission | undefined
        const sandbox = Layer.effect(
          Sandbox,
          Effect.gen(function*() {
            // What DockerSandbox.make counts with when no admission is passed to it.
            seen = yield* Admission.SandboxAdmission
            return yield* DockerSandbox.make(engine)
          })
        )
        const runtime = Layer.empty.pipe(
          Layer.provideMerge(sandbox),
          Layer.provide(ClusterAdmission.layer("node-a")),
          Layer.provideMerge(database)
        )
        const left = yield* Effect.gen(function*() {
          yield* Sandbox
          const sql = yield* SqlClient.SqlClient
          return (yield* sql<{ slot_id: string }>`SELECT slot_id FROM sandbox_containers ORDER BY slot_id`).map((r) => r.slot_id)
        }).pipe(Effect.provide(runtime))
        assert.deepStrictEqual(left, ["b-1"])
        assert.isDefined(seen)
      }).pipe(Effect.scoped))
  })
}

describe("the Docker sandbox's admission", () => {
  const counting = (n: number): Admission.Admission => ({
    admit: () => Effect.void,
    release: () => Effect.void,
    enforce: () => Effect.void,
    live: Effect.succeed(n)
  })

  it.effect("counts with SandboxAdmission when it is set, else in memory of its own", () =>
    Effect.gen(function*() {
      const own = yield* DockerSandbox.make(engine)
      assert.strictEqual(yield* own.live, 0)
      const shared = yield* DockerSandbox.make(engine).pipe(Effect.provideService(Admission.SandboxAdmission, counting(7)))
      assert.strictEqual(yield* shared.live, 7)
      const given = yield* DockerSandbox.make(engine, { admission: counting(3) })
      assert.strictEqual(yield* given.live, 3)
    }))
})
