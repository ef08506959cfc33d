/**
 * Sessions as cluster entities (issue 28), two nodes in one process on a throwaway PostgreSQL: each
 * node's local SessionPool is a recorder, so the test sees which node ran each call. Real parts
 * otherwise: effect/cluster's Sharding over TCP on loopback, shard locks in PostgreSQL, anna's
 * `cluster_nodes` rows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Scope, Stream } from "effect"
import * as Postgres from "../../../src/layers/sql/Postgres.ts"
import type { ClusterSettings } from "../../../src/domain/cluster/settings.ts"
import { emptyUsage } from "../../../src/domain/model/types.ts"
import type { ResolvedChat, TurnEvent } from "../../../src/domain/runtime/types.ts"
import * as ClusterNode from "../../../src/layers/cluster/ClusterNode.ts"
import { NodeRegistry } from "../../../src/services/NodeRegistry.ts"
import { CurrentFence } from "../../../src/domain/cluster/fence.ts"
import { endAtRestart, lastAttempt, MOVED_NOTICE } from "../../../src/domain/runtime/restart.ts"
import { entityIdOf, followAttempts, workspaceKeyOf } from "../../../src/layers/cluster/SessionEntity.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AgentNotFound } from "../../../src/domain/config/errors.ts"
import type { Agent } from "../../../src/domain/config/agent.ts"
import { type LiveSession, SessionPool } from "../../../src/services/SessionPool.ts"
import { postgresEnabled, tempDatabaseUrl } from "../../support/postgres.ts"
import { freePort } from "../../support/ports.ts"
import { eventually } from "../../support/eventually.ts"

interface Call {
  readonly node: string
  readonly op: "turn" | "abort" | "release"
  readonly sessionKey: string
  readonly resumed?: boolean | undefined
  /** The fence the turn ran under (its node's epoch of the session). */
  readonly epoch?: number | undefined
}

const chatOf = (sessionKey: string): ResolvedChat => ({
  userId: "u",
  userName: "U",
  agentId: "a",
  platform: "http",
  chatId: "c",
  isGroup: false,
  context: "x",
  sessionKey,
  model: ""
})

const done: TurnEvent = { type: "done", stopReason: "end_turn", usage: emptyUsage, modelCalls: 1, toolCalls: 0 }

/** A node's own pool: records the call, answers with the node's name. */
const recorder = (node: string, calls: Array<Call>): SessionPool["Service"] => {
  const live: Array<LiveSession> = []
  return SessionPool.of({
    send: (chat, message, options) =>
      Stream.fromEffect(Effect.gen(function*() {
        const fence = yield* CurrentFence
        calls.push({ node, op: "turn", sessionKey: chat.sessionKey, resumed: options?.resumed, epoch: fence?.epoch })
        if (!live.some((s) => s.sessionKey === chat.sessionKey)) {
          live.push({ sessionKey: chat.sessionKey, agentId: chat.agentId, userId: chat.userId, running: false, sandbox: false, lastTurnAt: Date.now() })
        }
      })).pipe(Stream.flatMap(() => Stream.make<ReadonlyArray<TurnEvent>>({ type: "text", text: `${node}:${String(message)}` }, done))),
    abort: (sessionKey) => Effect.sync(() => calls.push({ node, op: "abort", sessionKey }) > 0),
    release: (sessionKey) => Effect.sync(() => calls.push({ node, op: "release", sessionKey }) > 0),
    live: Effect.sync(() => [...live])
  })
}

const settingsFor = (nodeId: string, port: number): ClusterSettings => ({
  address: { host: "127.0.0.1", port },
  listen: { host: "127.0.0.1", port },
  nodeId,
  shards: 30,
  leaseSeconds: 3,
  shutdownSeconds: 5
})

/** The agents the entity routing asks about: "s" shares one workspace among its users; any other is not found (routed as `user`). */
const agentsLayer = Layer.succeed(AgentStore, {
  get: (id: string) => (id === "s" ? Effect.succeed({ id, sandboxWorkspace: "shared" } as Agent) : Effect.fail(new AgentNotFound({ id })))
} as unknown as AgentStore["Service"])

/** A node: its own scope (closed to stop it), the cluster's SessionPool and its registry. */
const startNode = (url: string, nodeId: string, calls: Array<Call>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const layer = ClusterNode.layer(settingsFor(nodeId, yield* Effect.promise(freePort)), Redacted.make(url), "test").pipe(
      Layer.provide(Layer.succeed(SessionPool, recorder(nodeId, calls))),
      Layer.provide(agentsLayer),
      Layer.provide(Postgres.layer(url, { maxConnections: 3 }))
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      scope,
      pool: context.mapUnsafe.get(SessionPool.key) as SessionPool["Service"],
      registry: context.mapUnsafe.get(NodeRegistry.key) as NodeRegistry["Service"],
      stop: Scope.close(scope, Exit.void)
    }
  })

const textOf = (events: ReadonlyArray<TurnEvent>) => events.flatMap((e) => (e.type === "text" ? [e.text] : [])).join("")

describe("followAttempts", () => {
  const chunk = (attempt: string, event: TurnEvent) => ({ attempt, event })
  it.effect("passes one attempt's events through and stops at its done", () =>
    Effect.gen(function*() {
      const out = yield* Stream.runCollect(followAttempts(Stream.make(chunk("a", { type: "text", text: "1" }), chunk("a", done), chunk("a", { type: "text", text: "late" }))))
      expect(out).toEqual([{ type: "text", text: "1" }, done])
    }))
  it.effect("a second attempt is announced by a restart, then shown whole; endAtRestart ends the turn there instead", () =>
    Effect.gen(function*() {
      const chunks = Stream.make(
        chunk("a", { type: "text", text: "1" }),
        chunk("a", { type: "text", text: "2" }),
        chunk("b", { type: "text", text: "1" }),
        chunk("b", { type: "text", text: "2" }),
        chunk("b", { type: "text", text: "3" }),
        chunk("b", done),
        chunk("a", { type: "text", text: "late" })
      )
      const out = yield* Stream.runCollect(followAttempts(chunks))
      expect(out.map((e) => e.type)).toEqual(["text", "text", "restart", "text", "text", "text", "done"])
      // What a channel that rewrites shows: the last attempt alone, never "12" + "123".
      expect(textOf(lastAttempt(out))).toBe("123")
      const http = yield* Stream.runCollect(endAtRestart(followAttempts(chunks)))
      expect(textOf(http)).toBe("12")
      expect(http.at(-2)).toEqual({ type: "notice", text: MOVED_NOTICE })
      expect(http.at(-1)).toMatchObject({ type: "done", stopReason: "unavailable", error: { kind: "unavailable" } })
    }))
  it.effect("a stream cut before its done still ends with one", () =>
    Effect.gen(function*() {
      const out = yield* Stream.runCollect(followAttempts(Stream.make(chunk("a", { type: "text", text: "1" }))))
      expect(out.map((e) => e.type)).toEqual(["text", "notice", "done"])
      const failed = yield* Stream.runCollect(followAttempts(Stream.concat(Stream.make(chunk("a", { type: "text", text: "1" })), Stream.fail("gone"))))
      expect(failed.map((e) => e.type)).toEqual(["text", "notice", "done"])
    }))
})

describe("workspaceKeyOf", () => {
  it("names a session's workspace: agent and user in user mode, the agent alone in shared mode or for no user", () => {
    expect(workspaceKeyOf("a:http:u1:0", "user")).toBe(workspaceKeyOf("a:telegram:u1:dm#2", "user"))
    expect(workspaceKeyOf("a:http:u1:0", "user")).not.toBe(workspaceKeyOf("a:http:u2:0", "user"))
    expect(workspaceKeyOf("a:http:u1:0", "shared")).toBe(workspaceKeyOf("a:http:u2:x", "shared"))
    expect(workspaceKeyOf("a:cli::0", "user")).toBe(workspaceKeyOf("a:http:u2:x", "shared"))
    expect(workspaceKeyOf("a:http:u1:0", "user")).not.toBe(workspaceKeyOf("b:http:u1:0", "user"))
  })
})

describe("entityIdOf", () => {
  it("is 64 hex characters for any key, the same for the same key", () => {
    const long = `agent:http:${"u".repeat(400)}:ctx`
    expect(entityIdOf(long)).toMatch(/^[0-9a-f]{64}$/)
    expect(entityIdOf(long)).toBe(entityIdOf(long))
    expect(entityIdOf(`${long}x`)).not.toBe(entityIdOf(long))
  })
})

if (postgresEnabled()) {
  describe("sessions on a cluster of two nodes (PostgreSQL)", () => {
    it.live("each session's calls run on its one owner, whichever node they enter; a stopped node's sessions move", () =>
      Effect.gen(function*() {
        const url = yield* tempDatabaseUrl
        // anna's tables first (cluster_nodes), as a gateway's start does.
        yield* Effect.scoped(Layer.build(Postgres.layer(url, { maxConnections: 1 })))
        const calls: Array<Call> = []
        const a = yield* startNode(url, "node-a", calls)
        const b = yield* startNode(url, "node-b", calls)
        const keys = [
          ...Array.from({ length: 24 }, (_, i) => i === 0 ? `a:http:${"long".repeat(80)}:0` : `a:http:user${i}:0`),
          // More sessions of user1 (another platform, another context), and agent s's users, who share its workspace.
          "a:telegram:user1:dm",
          "a:http:user1:ctx#2",
          ...Array.from({ length: 6 }, (_, i) => `s:http:user${i}:0`)
        ]
        // Both nodes hold shards once the second has joined.
        yield* eventually(Effect.gen(function*() {
          const nodes = yield* a.registry.nodes
          expect(nodes.map((n) => n.nodeId)).toEqual(["node-a", "node-b"])
          expect(nodes.every((n) => n.shards > 0)).toBe(true)
          expect(nodes.reduce((s, n) => s + n.shards, 0)).toBe(30)
        }), 20_000)
        for (const [i, key] of keys.entries()) {
          for (const entry of [a, b, i % 2 === 0 ? a : b]) {
            const events = yield* Stream.runCollect(entry.pool.send(chatOf(key), `m${i}`))
            expect(events.at(-1)?.type).toBe("done")
            expect(textOf(events)).toMatch(new RegExp(`^node-[ab]:m${i}$`))
          }
        }
        const owners = new Map<string, Set<string>>()
        for (const c of calls) owners.set(c.sessionKey, (owners.get(c.sessionKey) ?? new Set()).add(c.node))
        expect([...owners.values()].every((s) => s.size === 1)).toBe(true)
        // One workspace, one node: every session that mounts it is owned by the same node.
        const byWorkspace = new Map<string, Set<string>>()
        for (const c of calls) {
          const w = workspaceKeyOf(c.sessionKey, c.sessionKey.startsWith("s:") ? "shared" : "user")
          byWorkspace.set(w, (byWorkspace.get(w) ?? new Set()).add(c.node))
        }
        expect([...byWorkspace.values()].every((s) => s.size === 1)).toBe(true)
        expect(byWorkspace.size).toBe(24 + 1)
        const byNode = new Set([...owners.values()].flatMap((s) => [...s]))
        expect(byNode).toEqual(new Set(["node-a", "node-b"]))
        // Every turn ran under its owner's fence; a turn id delivered again runs as resumed, on either node.
        expect(calls.every((c) => c.op !== "turn" || (c.epoch !== undefined && c.epoch >= 1))).toBe(true)
        expect(calls.every((c) => c.op !== "turn" || c.resumed === false)).toBe(true)
        const retried = keys[5] ?? ""
        yield* Stream.runCollect(a.pool.send(chatOf(retried), "once", { turnId: "http:u:retry-1" }))
        yield* Stream.runCollect(b.pool.send(chatOf(retried), "once", { turnId: "http:u:retry-1" }))
        expect(calls.filter((c) => c.sessionKey === retried).slice(-2).map((c) => c.resumed)).toEqual([false, true])
        // /abort and release entered on either node reach the owner.
        const key = keys[3] ?? ""
        const owner = [...(owners.get(key) ?? [])][0]
        expect(yield* b.pool.abort(key)).toBe(true)
        expect(yield* a.pool.release(key, "test")).toBe(true)
        expect(calls.filter((c) => c.sessionKey === key && c.op !== "turn").map((c) => `${c.node}/${c.op}`)).toEqual([`${owner}/abort`, `${owner}/release`])
        // Live sessions are every node's, seen from either.
        yield* eventually(Effect.gen(function*() {
          expect(new Set((yield* a.pool.live).map((s) => s.sessionKey))).toEqual(new Set(keys))
          expect(new Set((yield* b.pool.live).map((s) => s.sessionKey))).toEqual(new Set(keys))
        }), 10_000)
        // Node b stops: its sessions move to a, whose next turns run them.
        const onB = keys.filter((k) => owners.get(k)?.has("node-b"))
        yield* b.stop
        const epochsOnB = new Map<string, number>()
        for (const c of calls) if (c.node === "node-b" && c.epoch !== undefined) epochsOnB.set(c.sessionKey, c.epoch)
        calls.length = 0
        for (const k of onB) {
          const events = yield* Stream.runCollect(a.pool.send(chatOf(k), "again"))
          expect(textOf(events)).toBe("node-a:again")
        }
        expect(calls.every((c) => c.node === "node-a")).toBe(true)
        // The new owner took each moved session at a later epoch: the old owner's writes would be refused.
        for (const c of calls) expect(c.epoch).toBeGreaterThan(epochsOnB.get(c.sessionKey) ?? 0)
        expect((yield* a.registry.nodes).map((n) => n.nodeId)).toEqual(["node-a"])
        yield* a.stop
      }), 90_000)
  })
}
