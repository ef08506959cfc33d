/**
 * The HTTP channel: an OpenAI-compatible API, so any OpenAI client talks to an anna agent that
 * remembers (`baseURL: http://127.0.0.1:8787/v1`, `apiKey: <anna token>`).
 *
 * - `POST /v1/chat/completions` (streaming and not), `GET /v1/models` and `GET /v1/models/{id}`
 *   (enabled agents as models, `owned_by: "anna"`), `GET /health` (no auth).
 * - Auth: `Authorization: Bearer <token>` from `anna user token <user>` → `ConfigStore.userForToken`;
 *   missing or unknown → 401 `invalid_api_key`.
 * - Routing: `model` names the agent (unknown or disabled → 404 `model_not_found`). The chat target
 *   is `{platform: "http", userId: user.id, externalUserId: user.id, agentId: model, chatId}`: the
 *   token already identifies the anna user, so the HTTP platform's "external id" IS the anna user
 *   id (convention), and `agentId` routes to the requested agent instead of the routing rules.
 *   The chat (session) name comes from the `X-Anna-Session` header, else the body's `user` field,
 *   else "default"; /new moves that chat to a fresh context as on any channel.
 * - Only the newest user message of `messages` is sent (anna keeps the history; see
 *   http/openaiRequest.ts); slash commands typed there ("/new", "/abort") go to the runtime as on
 *   every channel. How the turn's events become OpenAI text is in http/openaiWire.ts (notices as
 *   bracketed lines, status notices such as "compacted …" kept out of the content, tool activity
 *   not shown).
 * - A client that disconnects mid-answer does not abort the turn: the runtime runs turns in its
 *   own scope, so the turn finishes and is stored; only our reading of its events stops (the
 *   request fiber is interrupted, which is not an error). `/abort` stops a turn on purpose.
 * - A turn that fails (provider rate limit, timeout, context overflow, provider or sandbox down, the
 *   turn's deadline) is an error response, not a 200 completion: 429 + Retry-After, 504, 400
 *   `context_length_exceeded`, 502 or 503 (http/openaiWire.ts `ApiError.turnFailed`). A streamed
 *   answer's 200 is sent with its first output, so a turn failing before any gets the same status;
 *   one failing later ends with an OpenAI error frame instead.
 * - When the gateway stops (or restarts this channel), answers in flight get the server's grace
 *   (10 s) to end; a client still waiting then gets 503 `service_unavailable` saying the answer was
 *   cut off (an error frame and `[DONE]` in a stream already answering), never an empty response.
 *   The turn itself is the runtime's: stopped with the gateway, or run to its end and stored.
 * - Image parts: inline `data:` URLs are passed on; an `http(s)` image URL is refused (400
 *   `invalid_image_url`) unless `http.fetch_image_urls=on`, when anna fetches it behind webfetch's
 *   SSRF guard and passes the bytes on (http/imageUrls.ts) — never the URL itself.
 * - Bodies over 10 MiB, or a user message larger than memory keeps (8 MiB as stored) → 413;
 *   malformed JSON or wrong types → 400; unknown routes → 404; all with OpenAI error bodies.
 * - The gateway serves the admin API (`/api`) and the web console on this same server:
 *   `definitionWith(routes, { notFound })` (see src/programs/layers.ts `GatewayChannels`).
 */
import { ByteSize, type Cause, Clock, Effect, Exit, Layer, Option, Queue, Sink, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { Headers, HttpIncomingMessage, HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ServeError } from "effect/http/HttpServerError"
import { createHash, randomUUID } from "node:crypto"
import { EVERYONE, mayUse } from "../../domain/access/policy.ts"
import { ChannelError, ChannelStartFailed } from "../../domain/channels/errors.ts"
import type { Agent } from "../../domain/config/agent.ts"
import { type HttpSettings as Settings, HttpSettings, httpOptions } from "../../domain/config/channel.ts"
import { settingValue } from "../../domain/config/settings.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore, type User } from "../../services/ConfigStore.ts"
import { Channel, type ChannelDefinition } from "../../services/Channel.ts"
import { HttpAddress } from "../../services/HttpAddress.ts"
import { Runtime } from "../../services/Runtime.ts"
import { endAtRestart } from "../../domain/runtime/restart.ts"
import * as HttpTurns from "./http/idempotency.ts"
import { NodeRegistry } from "../../services/NodeRegistry.ts"
import { FETCH_SETTING, HOSTS_SETTING, imageUrlPolicy, resolveImageUrls } from "./http/imageUrls.ts"
import { newestUserMessage, parseChatRequest, sessionName } from "./http/openaiRequest.ts"
import {
  ApiError,
  collectTurn,
  completionBody,
  type CompletionMeta,
  errorNotices,
  SHUTDOWN,
  sseFrames,
  turnError,
  type WireEvent
} from "./http/openaiWire.ts"
import { DEFAULT_HOST, DEFAULT_PORT, errorResponse, serve, type ServeOptions, ShutdownDeadline } from "./http/server.ts"
import * as Tracing from "../../domain/observability/tracing.ts"

export { DEFAULT_HOST, DEFAULT_PORT, type ServeOptions }

/** The largest request body accepted (images come inline as data URIs). */
export const MAX_BODY_BYTES = 10 * 1024 * 1024

/** The platform name of this channel in chat targets and session keys. */
export const PLATFORM = "http"

/** The header that selects the session (chat) context; the body's `user` field is the fallback. */
export const SESSION_HEADER = "x-anna-session"

/** The header that makes a request's turn run once however often it is sent (http/idempotency.ts). */
export const IDEMPOTENCY_HEADER = "idempotency-key"

const storage = (e: { readonly message: string }) => ApiError.server(`anna could not read its configuration: ${e.message}`)

const modelObject = (agent: Agent) => ({
  id: agent.id,
  object: "model",
  created: Math.floor(agent.createdAt / 1000),
  owned_by: "anna"
})

const header = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined =>
  Option.getOrUndefined(Headers.get(request.headers, name))

/** A turn's events up to the first that starts the answer (text, tool activity) or ends the turn; notices are held. */
const untilAnswerStarts = Sink.fold(
  (): ReadonlyArray<WireEvent> => [],
  (held) => held.every((e) => e.type === "notice"),
  (held, event: WireEvent) => Effect.succeed([...held, event])
)

/** Answers ApiErrors with their OpenAI error body (logging server-side failures). */
const answerErrors = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.catch(effect, (e) => (e.status >= 500 ? Effect.logWarning(`HTTP channel: ${e.reason}`) : Effect.void).pipe(Effect.as(errorResponse(e))))

/** The routes of the channel; serve them with `layer` or together with other routes via `http/server.ts`. */
export const routes = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const runtime = yield* Runtime
  const config = yield* ConfigStore
  const agents = yield* AgentStore
  const deadline = yield* Effect.serviceOption(ShutdownDeadline)
  // On a cluster, claims carry this node's id: a retry takes over a claim whose node died at once.
  const node = yield* Effect.serviceOption(NodeRegistry)
  const turns = HttpTurns.make(yield* SqlClient.SqlClient, Option.isSome(node) ? node.value.nodeId : undefined)
  /** The channel's scope: what answers a claimed turn outlives its request, not the channel. */
  const channelScope = yield* Effect.scope

  /**
   * A turn's events, cut by a `shutdown` event when the server is shutting down and the turn has
   * had its grace: the client then gets an error now, rather than nothing when the server gives up
   * on the request. The turn itself runs on in the runtime until the runtime stops it.
   */
  const untilShutdown = (events: Stream.Stream<WireEvent>): Stream.Stream<WireEvent> =>
    Option.isNone(deadline)
      ? events
      : Stream.merge(events, Stream.fromEffect(Effect.as(deadline.value.reached, SHUTDOWN)), { haltStrategy: "either" })

  const authenticate = Effect.fn("HttpChannel.authenticate")(function*(request: HttpServerRequest.HttpServerRequest) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header(request, "authorization") ?? "")
    const token = match?.[1]
    if (token === undefined) {
      return yield* ApiError.unauthorized(
        "You didn't provide an API key. Send your anna token in an Authorization header using Bearer auth (Authorization: Bearer YOUR_TOKEN); `anna user token <user>` issues one."
      )
    }
    return yield* config.userForToken(token).pipe(
      Effect.catchTags({
        Unauthorized: () => Effect.fail(ApiError.unauthorized("Incorrect API key provided. `anna user token <user>` issues a token.")),
        StorageError: (e) => Effect.fail(storage(e))
      })
    )
  })

  const enabledAgent = (id: string) =>
    agents.get(id).pipe(
      Effect.catchTags({
        AgentNotFound: () => Effect.fail(ApiError.modelNotFound(id)),
        StorageError: (e) => Effect.fail(storage(e))
      }),
      Effect.filterOrFail((agent) => agent.enabled, () => ApiError.modelNotFound(id, "the agent is disabled"))
    )

  const readBody = (request: HttpServerRequest.HttpServerRequest) =>
    request.text.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)),
      Effect.mapError((e) =>
        e.reason._tag === "RequestParseError" && e.reason.reason === "BodyTooLarge"
          ? ApiError.tooLarge(MAX_BODY_BYTES)
          : ApiError.badRequest("The request body could not be read.")
      )
    )

  const listModels = Effect.fn("HttpChannel.listModels")(function*(request: HttpServerRequest.HttpServerRequest) {
    const user = yield* authenticate(request)
    const all = yield* agents.list.pipe(Effect.mapError(storage))
    // Only the agents this user may use (their access policies), as /agent lists them.
    const subject = { id: user.id, attributes: user.attributes ?? {} }
    return HttpServerResponse.jsonUnsafe({ object: "list", data: all.filter((a) => a.enabled && mayUse(a.access ?? EVERYONE, subject)).map(modelObject) })
  }, answerErrors)

  const getModel = Effect.fn("HttpChannel.getModel")(function*(request: HttpServerRequest.HttpServerRequest) {
    const user = yield* authenticate(request)
    const params = yield* HttpRouter.params
    const agent = yield* enabledAgent(params["model"] ?? "")
    if (!mayUse(agent.access ?? EVERYONE, { id: user.id, attributes: user.attributes ?? {} })) {
      return yield* ApiError.forbidden(`agent ${agent.id} is not open to you; ask the operator for access`)
    }
    return HttpServerResponse.jsonUnsafe(modelObject(agent))
  }, answerErrors)

  /** A gateway setting's value now (its default when unset or no longer valid). */
  const setting = (key: string) =>
    config.getSetting(key).pipe(Effect.map((stored) => settingValue(key, Option.getOrUndefined(stored))), Effect.mapError(storage))
  const imageSettings = Effect.zipWith(setting(FETCH_SETTING), setting(HOSTS_SETTING), imageUrlPolicy)

  const resolveChat = (user: User, agentId: string, chatId: string) =>
    runtime.resolve({ platform: PLATFORM, externalUserId: user.id, userId: user.id, userName: user.name, chatId, agentId }).pipe(
      Effect.catchTags({
        NoAgent: (e) => Effect.fail(ApiError.modelNotFound(agentId, e.reason)),
        AccessDenied: (e) => Effect.fail(ApiError.forbidden(e.reason)),
        StorageError: (e) => Effect.fail(storage(e))
      })
    )

  /**
   * A claimed turn's events, read to their end by a fiber of the channel's own whatever becomes of
   * the request (a client that disconnects does not leave its claim running until the deadline):
   * when the turn is done, its answer is stored for retries; when it fails, the key is released.
   */
  const answerOnce = (userId: string, key: string, claim: string, meta: CompletionMeta, events: Stream.Stream<WireEvent>) =>
    Effect.gen(function*() {
      const queue = yield* Queue.unbounded<WireEvent, Cause.Done>()
      const kept: Array<WireEvent> = []
      yield* Stream.runForEach(events, (event) => {
        if (HttpTurns.replayable(event)) kept.push(event)
        return Queue.offer(queue, event)
      }).pipe(
        Effect.onExit((exit) => {
          const done = kept.findLast((e) => e.type === "done")
          const answered = Exit.isSuccess(exit) && done?.type === "done" && turnError({ done, shutdown: false, notices: [] }) === undefined
          return (answered ? turns.finish(userId, key, claim, { meta, events: kept }) : turns.release(userId, key, claim)).pipe(
            Effect.catch((e) => Effect.logWarning(`HTTP channel: the answer to Idempotency-Key ${key} could not be stored: ${e.message}`))
          )
        }),
        Effect.ensuring(Queue.end(queue)),
        Effect.forkIn(channelScope)
      )
      return Stream.fromQueue(queue)
    })

  /**
   * The turn's events for this request: with an `Idempotency-Key`, the first request's (claimed now,
   * or replayed when done), else a fresh turn's.
   */
  const turnEvents = Effect.fn("HttpChannel.turnEvents")(function*(
    request: HttpServerRequest.HttpServerRequest,
    raw: string,
    user: User,
    agent: Agent,
    run: (turnId: string | undefined) => Stream.Stream<WireEvent>,
    meta: CompletionMeta
  ) {
    const key = header(request, IDEMPOTENCY_HEADER)
    if (key === undefined) return { events: run(undefined), replayed: false, meta }
    const problem = HttpTurns.keyProblem(key)
    if (problem !== undefined) return yield* ApiError.badRequest(problem)
    const hash = createHash("sha256").update(header(request, SESSION_HEADER) ?? "").update("\0").update(raw).digest("hex")
    const now = yield* Clock.currentTimeMillis
    const claim = yield* turns.claim(user.id, key, hash, now, now + (agent.turnTimeoutSeconds + 60) * 1000).pipe(Effect.mapError(storage))
    switch (claim._tag) {
      case "Mismatch":
        return yield* ApiError.idempotencyKeyReused()
      case "Running":
        return yield* ApiError.idempotencyKeyInUse()
      case "Replay":
        return { events: Stream.fromIterable(claim.answer.events), replayed: true, meta: claim.answer.meta }
      case "Claimed":
        // The key is the turn's id: a retry that reaches a turn still going or half done (on a cluster,
        // after its node died) resumes it rather than running a second one.
        return { events: yield* answerOnce(user.id, key, claim.id, meta, run(`http:${user.id}:${key}`)), replayed: false, meta }
    }
  })

  const chatCompletions = Effect.fn("HttpChannel.chatCompletions")(function*(request: HttpServerRequest.HttpServerRequest) {
    const user = yield* authenticate(request)
    const raw = yield* readBody(request)
    const body = yield* parseChatRequest(raw)
    const parsed = yield* newestUserMessage(body)
    const agent = yield* enabledAgent(body.model)
    const sessionHeader = header(request, SESSION_HEADER)?.trim()
    const chatId = yield* sessionName(sessionHeader === "" ? undefined : sessionHeader, body)
    const chat = yield* resolveChat(user, agent.id, chatId)
    yield* Metrics.channelMessage(PLATFORM, "in", "accepted")
    // Only for a user who may use the agent: fetching is work done on their behalf.
    const message = yield* resolveImageUrls(parsed, imageSettings)
    const fresh: CompletionMeta = {
      id: `chatcmpl-${randomUUID().replace(/-/g, "")}`,
      created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
      model: body.model
    }
    // The turn's span continues this request's (which continues a caller's `traceparent`).
    const parentSpan = yield* Tracing.currentSpan
    const turn = yield* turnEvents(request, raw, user, agent, (turnId) => endAtRestart(runtime.send(chat, message, { parentSpan, turnId })), fresh)
    const meta = turn.meta
    const replayHeaders = turn.replayed ? { "idempotent-replayed": "true" } : {}
    const events = untilShutdown(turn.events)
    if (body.stream === true) {
      // The 200 waits for the turn's first output, so that a turn failing before any (a provider's
      // 429 on its first call, say) gets its real status, which clients back off on; once the answer
      // has started, a failure can only be an error frame (see http/openaiWire.ts).
      const [held, rest] = yield* Stream.peel(events, untilAnswerStarts)
      const last = held.at(-1)
      const failed = last?.type === "done" || last?.type === "shutdown"
        ? turnError({
          done: last.type === "done" ? last : undefined,
          shutdown: last.type === "shutdown",
          notices: errorNotices(held)
        })
        : undefined
      yield* Metrics.channelMessage(PLATFORM, "out", failed === undefined ? "sent" : "failed")
      if (failed !== undefined) return yield* failed
      const frames = Stream.concat(Stream.fromIterable(held), rest).pipe(
        sseFrames(meta, body.stream_options?.include_usage === true),
        Stream.encodeText
      )
      return HttpServerResponse.stream(frames, {
        contentType: "text/event-stream; charset=utf-8",
        headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...replayHeaders }
      })
    }
    const collected = yield* collectTurn(events)
    const failed = turnError(collected)
    yield* Metrics.channelMessage(PLATFORM, "out", failed === undefined ? "sent" : "failed")
    if (failed !== undefined) return yield* failed
    return HttpServerResponse.jsonUnsafe(completionBody(meta, collected), { headers: replayHeaders })
  }, answerErrors)

  yield* router.add("GET", "/health", HttpServerResponse.jsonUnsafe({ ok: true }))
  yield* router.add("GET", "/v1/models", listModels)
  yield* router.add("GET", "/v1/models/:model", getModel)
  yield* router.add("POST", "/v1/chat/completions", chatCompletions)
}))

/**
 * The channel on its own server: `HttpChannel.layer({ host, port })` (defaults 127.0.0.1:8787;
 * port 0 picks a free port). Needs Runtime, ConfigStore, AgentStore and SqlClient; provides the bound
 * `HttpAddress`. Listening starts when the layer is built and stops when its scope closes.
 */
export const layer = (options: ServeOptions = {}): Layer.Layer<HttpAddress, ServeError, Runtime | ConfigStore | AgentStore | SqlClient.SqlClient> =>
  serve(routes, options)

/**
 * The channel's server with more routes on it (the admin API and the web console): one port for
 * everything the gateway serves over HTTP.
 */
export const layerWith = <E, R>(extra: Layer.Layer<never, E, R>, options: ServeOptions = {}) =>
  serve(Layer.merge(routes, extra), options)

/** The channel's Channel service over a running server: it answers, it cannot push. */
const channelService = (withConsole: boolean) => Layer.effect(Channel, Effect.gen(function*() {
  const address = yield* HttpAddress
  return Channel.of({
    id: PLATFORM,
    description: `HTTP channel (OpenAI-compatible) on ${address.url}/v1${withConsole ? `; web console and admin API on ${address.url}/` : ""}`,
    address: { host: address.host, port: address.port },
    notify: () =>
      Effect.fail(new ChannelError({ channel: PLATFORM, reason: "the HTTP channel cannot push messages (its clients ask and it answers); deliver on a chat platform" }))
  })
}))

/**
 * The HTTP channel as the gateway runs it: settings decoded by `HttpSettings` (host, port and the
 * request limits), the server started when the layer is built.
 */
export const definition: ChannelDefinition<Settings, ChannelStartFailed, Runtime | ConfigStore | AgentStore | SqlClient.SqlClient> =
  definitionWith(Layer.empty)

/**
 * The channel with `extra` routes on its server (see `layerWith`): rebuilt with the channel when its
 * settings change. The routes' own failures to build are the channel's failure to start.
 */
export function definitionWith<E, R>(extra: Layer.Layer<never, E, R>, serveOptions: Pick<ServeOptions, "notFound"> = {}) {
  const channel = (settings: Settings) => {
    const o = httpOptions(settings)
    const serveProblem = (e: unknown) =>
      isServeError(e) ? listenProblem(e.cause, o.host, o.port) : `the HTTP server's routes could not start: ${describeCause(e)}`
    return channelService(serveOptions.notFound !== undefined).pipe(
      Layer.provide(layerWith(extra, {
        ...serveOptions,
        host: o.host,
        port: o.port,
        requestTimeoutSeconds: o.requestTimeoutSeconds,
        headersTimeoutSeconds: o.headersTimeoutSeconds,
        maxConnections: o.maxConnections,
        maxConnectionsPerAddress: o.maxConnectionsPerAddress
      })),
      Layer.catch((e) => Layer.effect(Channel, Effect.fail(new ChannelStartFailed({ channel: PLATFORM, reason: serveProblem(e) }))))
    )
  }
  return { id: PLATFORM, settings: HttpSettings, layer: channel } satisfies ChannelDefinition<Settings, ChannelStartFailed, unknown>
}

const isServeError = (e: unknown): e is ServeError =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === "ServeError"

/** Why the server could not listen, and what to do about it. */
const listenProblem = (cause: unknown, host: string, port: number): string => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
  const where = `${host}:${port}`
  const change = "choose another with `anna channel set http --config port=PORT` (or `anna gateway --port PORT`)"
  switch (code) {
    case "EADDRINUSE":
      return `${where} is already in use (another anna gateway, or another program); stop it, or ${change}`
    case "EACCES":
      return `not allowed to listen on ${where} (ports below 1024 need privileges); ${change}`
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return `${host} is not an address of this machine; set one with \`anna channel set http --config host=127.0.0.1\``
    default:
      return `cannot listen on ${where}: ${describeCause(cause)}`
  }
}

const describeCause = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))
