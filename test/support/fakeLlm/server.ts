/**
 * A fake LLM service on 127.0.0.1 speaking the Anthropic Messages, OpenAI Chat Completions and OpenAI
 * Responses protocols, scriptable per test: each POST takes the next scripted answer (a reply, an
 * error, a disconnect, a hang); with none left it answers a plain "ok". Every request is recorded.
 *
 * Routes (as the official SDKs call them): Anthropic base URL `http://127.0.0.1:PORT` →
 * POST /v1/messages, GET /v1/models; OpenAI base URL `http://127.0.0.1:PORT/v1` →
 * POST /v1/chat/completions, POST /v1/responses, GET /v1/models (Anthropic's listing is told apart
 * by its `anthropic-version` header); POST /v1/embeddings answers deterministic vectors
 * (./embeddings.ts) outside the script, so embedding calls never take a chat's scripted answer;
 * `failEmbeddings` makes the next ones fail.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { anthropicProtocol } from "./anthropic.ts"
import { respondEmbeddings } from "./embeddings.ts"
import { openAiChatProtocol } from "./openaiChat.ts"
import { openAiResponsesProtocol } from "./openaiResponses.ts"
import type { RecordedRequest, Scripted } from "./script.ts"
import { json, type Protocol } from "./wire.ts"

export const PROTOCOLS: ReadonlyArray<Protocol> = [anthropicProtocol, openAiChatProtocol, openAiResponsesProtocol]

export interface FakeLlm {
  /** `http://127.0.0.1:PORT` (Anthropic's base URL). */
  readonly url: string
  /** `http://127.0.0.1:PORT/v1` (OpenAI's base URL). */
  readonly openAiUrl: string
  /** Appends answers for the next POSTs, in order. */
  readonly script: (...answers: ReadonlyArray<Scripted>) => void
  /** Forgets scripted answers and the responder, and restores the default models. */
  readonly reset: () => void
  /**
   * Answers POSTs when no scripted answer is left (default: a plain "ok" reply). A promise holds
   * the request open until the test settles it (an answer given when the test says so).
   */
  readonly respondWith: (responder: (request: RecordedRequest) => Scripted | Promise<Scripted>) => void
  readonly requests: ReadonlyArray<RecordedRequest>
  /**
   * Resolves once `condition` holds. It is checked now and again at every event of the server — a
   * request recorded, a response closed (finished or aborted, see `aborted`) — so a test waits for
   * what the server saw, never by polling or sleeping. Rejects after `timeoutMs` (default 10 s)
   * with `what` in the message: a deadline for a failing test, not a wait.
   */
  readonly when: (condition: () => boolean, options?: { readonly what?: string; readonly timeoutMs?: number }) => Promise<void>
  /** Resolves with request number `index` of `requests` (0-based) once the server has recorded it. */
  readonly request: (index: number, options?: { readonly timeoutMs?: number }) => Promise<RecordedRequest>
  /** The next `count` POST /v1/embeddings answer HTTP `status` (default 500) instead of vectors. */
  readonly failEmbeddings: (count: number, status?: number) => void
  /**
   * Refuses (HTTP 400, as OpenAI refuses an input over the model's limit) every embeddings request
   * with a text containing `marker`, until called with undefined.
   */
  readonly refuseEmbeddingsOf: (marker: string | undefined) => void
  /** Model ids served by GET /v1/models. */
  models: ReadonlyArray<string>
  readonly close: () => Promise<void>
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((done, fail) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (c: string) => (body += c))
    req.on("end", () => done(body))
    req.on("error", fail)
  })

export const startFakeLlm = (): Promise<FakeLlm> => {
  const queue: Array<Scripted> = []
  const requests: Array<RecordedRequest> = []
  const sockets = new Set<import("node:net").Socket>()
  /** Re-checked at every server event (see `when`). */
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const w of [...waiters]) w()
  }
  const when = (condition: () => boolean, options: { readonly what?: string; readonly timeoutMs?: number } = {}) =>
    new Promise<void>((done, fail) => {
      const check = () => {
        if (!condition()) return
        waiters.delete(check)
        clearTimeout(deadline)
        done()
      }
      const timeoutMs = options.timeoutMs ?? 10_000
      const deadline = setTimeout(() => {
        waiters.delete(check)
        fail(new Error(`fake LLM: ${options.what ?? "the awaited condition"} did not happen within ${timeoutMs} ms`))
      }, timeoutMs)
      waiters.add(check)
      check()
    })
  const defaults = {
    models: ["fake-large", "fake-small"],
    responder: (): Scripted => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
  }
  const embeddingFailures: Array<number> = []
  let refusedMarker: string | undefined
  const state: { models: ReadonlyArray<string>; responder: (request: RecordedRequest) => Scripted | Promise<Scripted> } = { ...defaults }
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const raw = await readBody(req)
    let body: unknown = null
    try {
      body = raw === "" ? null : JSON.parse(raw)
    } catch {
      body = raw
    }
    const recorded: RecordedRequest = { method: req.method ?? "", path: url.pathname, headers: req.headers, body, aborted: false }
    requests.push(recorded)
    res.on("close", () => {
      if (!res.writableFinished) recorded.aborted = true
      notify()
    })
    notify()
    if (req.method === "GET" && url.pathname === "/v1/models") {
      const protocol = req.headers["anthropic-version"] !== undefined ? PROTOCOLS[0] : PROTOCOLS[1]
      return protocol?.listModels(state.models, res)
    }
    if (req.method === "POST" && url.pathname === "/v1/embeddings") {
      const status = embeddingFailures.shift()
      if (status !== undefined) return json(res, status, { error: { message: `fake embeddings failure (HTTP ${status})`, type: "server_error", code: null, param: null } })
      const input = typeof body === "object" && body !== null && "input" in body ? body.input : undefined
      const texts = Array.isArray(input) ? input : [input]
      const marker = refusedMarker
      if (marker !== undefined && texts.some((t) => typeof t === "string" && t.includes(marker))) {
        return json(res, 400, {
          error: { message: "This model's maximum context length is 8192 tokens (fake refusal)", type: "invalid_request_error", code: null, param: "input" }
        })
      }
      return respondEmbeddings(body, res)
    }
    const protocol = req.method === "POST" ? PROTOCOLS.find((p) => p.handles(url.pathname)) : undefined
    if (protocol === undefined) return json(res, 404, { error: { message: `no route ${req.method} ${url.pathname}` } })
    const scripted = queue.shift() ?? (await state.responder(recorded))
    if (scripted.kind === "hang") return
    protocol.respond(recorded, scripted, res)
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  return new Promise((done) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const url = `http://127.0.0.1:${port}`
      done({
        url,
        openAiUrl: `${url}/v1`,
        script: (...answers) => void queue.push(...answers),
        reset: () => {
          queue.length = 0
          embeddingFailures.length = 0
          state.models = defaults.models
          state.responder = defaults.responder
        },
        respondWith: (responder) => {
          state.responder = responder
        },
        failEmbeddings: (count, status = 500) => {
          for (let i = 0; i < count; i++) embeddingFailures.push(status)
        },
        refuseEmbeddingsOf: (marker) => {
          refusedMarker = marker
        },
        requests,
        when,
        request: (index, options = {}) =>
          when(() => requests.length > index, { what: `request #${index}`, ...options }).then(() => requests[index] as RecordedRequest),
        get models() {
          return state.models
        },
        set models(m) {
          state.models = m
        },
        close: () =>
          new Promise((closed) => {
            for (const s of sockets) s.destroy()
            server.close(() => closed())
          })
      })
    })
  })
}

