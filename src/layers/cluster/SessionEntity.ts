/**
 * Sessions as cluster entities (issue 28): each session is owned by the one node that holds its
 * shard; its turns, `/abort` and release run there, on that node's own SessionPool. Every node offers
 * the same `SessionPool` contract to the runtime, channels and admin API (`ClusterSessionPool`), and
 * sends each call to the owner through effect/cluster.
 *
 * - An entity is a workspace (`workspaceKeyOf`): all sessions whose sandbox mounts one workspace are
 *   owned by one node, so a workspace on shared storage is used by one node at a time. Its id is the
 *   SHA-256 of that key (hex, 64 characters): effect/cluster keeps ids in `VARCHAR(255)`. The owner's
 *   SessionPool runs each session's turns one at a time, different sessions side by side.
 * - A turn streams its events back with the owner's attempt id. When the owner dies mid-turn the
 *   library re-sends the call to the new owner, whose stream starts again: the caller sees a new
 *   attempt id and passes on a `restart` event (src/domain/runtime/restart.ts): a chat platform's
 *   message and the web chat's bubble are rewritten with the new attempt's answer, the HTTP stream
 *   ends with an error its client retries with the same Idempotency-Key — never a silently repeated
 *   prefix.
 * - Handlers run concurrently (an `/abort` must reach an entity whose turn is running); the owner's
 *   SessionPool still runs one turn of a session at a time.
 * - `live` is every node's live sessions, read from `cluster_nodes` (./NodeRegistry.ts): each node
 *   publishes its own there.
 */
import { createHash, randomUUID } from "node:crypto"
import { Cause, Effect, Layer, Schema, Stream, Tracer } from "effect"
import { Entity } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { CurrentFence } from "../../domain/cluster/fence.ts"
import { Rpc } from "effect/rpc"
import { MOVED_NOTICE, UNREACHABLE_NOTICE, unavailable } from "../../domain/runtime/restart.ts"
import * as Tracing from "../../domain/observability/tracing.ts"
import type { ResolvedChat, SendOptions, TurnEvent, UserMessage } from "../../domain/runtime/types.ts"
import { type LiveSession, SessionPool } from "../../services/SessionPool.ts"
import { NodeRegistry } from "../../services/NodeRegistry.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import type { WorkspaceMode } from "../../domain/config/agent.ts"
import * as SessionFences from "./SessionFences.ts"

/** An entity id: SHA-256 of what it stands for (workspaceKeyOf), in hex. */
export const entityIdOf = (key: string): string => createHash("sha256").update(key).digest("hex")

/**
 * What owns a session on a cluster: the workspace its sandbox mounts (src/domain/sandbox/spec.ts
 * `workspaceIn`) — the agent and the user of the session key (`{agent}:{platform}:{user}:{context}`)
 * in `user` mode, the agent alone in `shared` mode (and for sessions of no user). So every session
 * that uses one workspace runs on one node, and a workspace on shared storage is used by one node at
 * a time: one container, one writer of its files and of its disk image.
 */
export const workspaceKeyOf = (sessionKey: string, mode: WorkspaceMode): string => {
  const [agentId = "", , userId = ""] = sessionKey.split(":")
  return mode === "user" && userId !== "" ? `workspace:${agentId}:user:${userId}` : `workspace:${agentId}:shared`
}

/** One event of a turn as it travels between nodes: which attempt of the turn sent it. */
const TurnChunk = Schema.Struct({ attempt: Schema.String, event: Schema.Unknown })

export const Turn = Rpc.make("Turn", {
  payload: {
    chat: Schema.Unknown,
    message: Schema.Unknown,
    resumed: Schema.Boolean,
    /** The turn's id: the same for every delivery of one turn (SendOptions.turnId, or made by the caller). */
    turnId: Schema.String
  },
  success: TurnChunk,
  stream: true
})

export const Abort = Rpc.make("Abort", { payload: { sessionKey: Schema.String }, success: Schema.Boolean })

export const Release = Rpc.make("Release", { payload: { sessionKey: Schema.String, reason: Schema.String }, success: Schema.Boolean })

export const Session = Entity.make("Session", [Turn, Abort, Release])

/**
 * The entity's handlers, on the node that owns the session: they call this node's own pool (`local`).
 * Each start of the entity here takes the session's fence (a new epoch): from then on, writes made
 * for a turn of a former owner fail. A turn whose id was started before (a retry, or effect/cluster
 * re-sending it after its owner died) runs as resumed: its stored answer is given again, or its
 * stored message answered, never a second turn.
 */
export const handlers = (local: SessionPool["Service"], fences: SessionFences.SessionFences) =>
  Session.toLayer(
    Effect.gen(function*() {
      const entityId = (yield* Entity.CurrentAddress).entityId
      const epoch = yield* fences.take(entityId).pipe(Effect.orDie)
      const fence = { entityId, epoch }
      return Session.of({
        Turn: ({ payload }) =>
          Stream.unwrap(Effect.gen(function*() {
            const attempt = randomUUID()
            const first = yield* fences.firstStart(payload.turnId, entityId).pipe(
              Effect.catchCause((c) => Effect.logWarning(`cluster: could not record turn ${payload.turnId}: ${Cause.pretty(c)}`).pipe(Effect.as(true)))
            )
            // The turn's span continues the caller's: effect/cluster carries the trace across nodes.
            const parentSpan = yield* Tracing.currentSpan
            const options: SendOptions = {
              resumed: payload.resumed || !first,
              turnId: payload.turnId,
              ...(parentSpan === undefined ? {} : { parentSpan })
            }
            return local.send(payload.chat as ResolvedChat, payload.message as UserMessage, options).pipe(
              Stream.map((event) => ({ attempt, event })),
              Stream.provideService(CurrentFence, fence)
            )
          })),
        Abort: ({ payload }) => local.abort(payload.sessionKey),
        Release: ({ payload }) => local.release(payload.sessionKey, payload.reason)
      })
    }),
    // An /abort must reach a session whose turn is running: calls of one entity run side by side.
    { concurrency: "unbounded" }
  )

/**
 * A turn's events from its owner's chunks, up to its done. A chunk of another attempt (the owner
 * changed and the new one answers the turn again, resumed) gives a `restart` event, then the new
 * attempt's events: the channel rewrites what it showed, or ends the turn there (restart.ts). A
 * stream that fails, or ends without a done, ends with an `unavailable` one.
 */
export const followAttempts = <E, R>(chunks: Stream.Stream<{ readonly attempt: string; readonly event: unknown }, E, R>): Stream.Stream<TurnEvent, never, R> => {
  let attempt: string | undefined
  let ended = false
  const end = (text: string) => {
    if (ended) return []
    ended = true
    return unavailable(text)
  }
  return chunks.pipe(
    Stream.map((chunk): ReadonlyArray<TurnEvent> => {
      if (ended) return []
      const event = chunk.event as TurnEvent
      // The owner changed mid-turn and the new one started over: what was shown is void.
      const restarted = attempt !== undefined && chunk.attempt !== attempt
      attempt = chunk.attempt
      if (event.type === "done") ended = true
      return restarted ? [{ type: "restart" }, event] : [event]
    }),
    Stream.flattenIterable,
    Stream.takeUntil((event) => event.type === "done"),
    Stream.catchCause(() => Stream.fromIterable(end(UNREACHABLE_NOTICE))),
    // A stream that ended without its done event (the call was cut) still ends the turn for the channel.
    Stream.concat(Stream.suspend(() => Stream.fromIterable(end(MOVED_NOTICE))))
  )
}

/**
 * The SessionPool every node offers: each call goes to the session's owner (maybe this node).
 * Needs Sharding (the cluster) and NodeRegistry (for `live`).
 */
export const clusterPool = Effect.gen(function*() {
  const makeClient = yield* Session.client
  const registry = yield* NodeRegistry
  const agents = yield* AgentStore
  /** The session's entity: its workspace's, by the agent's workspace mode now (an agent not found: `user`). */
  const client = (sessionKey: string) =>
    agents.get(sessionKey.split(":")[0] ?? "").pipe(
      Effect.map((agent) => agent.sandboxWorkspace),
      Effect.orElseSucceed((): WorkspaceMode => "user"),
      Effect.map((mode) => makeClient(entityIdOf(workspaceKeyOf(sessionKey, mode))))
    )

  const send = (chat: ResolvedChat, message: UserMessage, options?: SendOptions): Stream.Stream<TurnEvent> =>
    followAttempts(
      Stream.unwrap(Effect.map(client(chat.sessionKey), (c) => c.Turn({ chat, message, resumed: options?.resumed === true, turnId: options?.turnId ?? randomUUID() }))).pipe(
        Stream.tapCause((cause) => Effect.logWarning(`cluster: a turn of ${chat.sessionKey} could not reach its node: ${Cause.pretty(cause)}`))
      )
    ).pipe(options?.parentSpan === undefined ? (s) => s : Stream.provideService(Tracer.ParentSpan, options.parentSpan))

  const quietly = <A>(what: string, sessionKey: string, effect: Effect.Effect<A, unknown>, fallback: A) =>
    effect.pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning(`cluster: ${what} of ${sessionKey} could not reach its node: ${Cause.pretty(cause)}`).pipe(Effect.as(fallback))
      )
    )

  return SessionPool.of({
    send,
    abort: (sessionKey) => quietly("abort", sessionKey, Effect.flatMap(client(sessionKey), (c) => c.Abort({ sessionKey })), false),
    release: (sessionKey, reason) => quietly("release", sessionKey, Effect.flatMap(client(sessionKey), (c) => c.Release({ sessionKey, reason })), false),
    live: Effect.map(registry.live, (all): ReadonlyArray<LiveSession> => all)
  })
})

/**
 * The cluster's SessionPool over this node's own (`SessionPool` in the context, the local one): the
 * entity's handlers are registered with it and the pool provided out sends every call to the owner.
 */
export const layer = (nodeId: string) =>
  Layer.effect(SessionPool, clusterPool).pipe(
    Layer.provideMerge(Layer.unwrap(Effect.gen(function*() {
      return handlers(yield* SessionPool, SessionFences.make(yield* SqlClient.SqlClient, nodeId))
    })))
  )
