/**
 * The HTTP channel through the official `openai` SDK (and raw fetch for wire details) against a
 * real server on an ephemeral port, over a scripted fake Runtime (it echoes who/where/what it was
 * sent, so replies can be told apart) and small fake Config/Agent stores.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Schedule, Schema, Scope } from "effect"
import OpenAI from "openai"
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import * as HttpChannel from "../../../src/layers/channels/HttpChannel.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import type { ChatTarget, ResolvedChat, UserMessage } from "../../../src/domain/runtime/types.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { tempDbFile } from "../../support/db.ts"
import { control, fakeRuntime, fakeServices, recorded, resetRecorded } from "../../support/httpChannelFakes.ts"

const call = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => e })
const failure = <A>(f: () => Promise<A>) => Effect.flip(call(f))

const client = (url: string, apiKey = "tok-alice", headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: 0, defaultHeaders: headers })

const url = Effect.gen(function*() {
  return (yield* HttpAddress).url
})

const ErrorBody = Schema.Struct({
  error: Schema.Struct({ message: Schema.String, type: Schema.String, param: Schema.NullOr(Schema.String), code: Schema.NullOr(Schema.String) })
})
/** Status and OpenAI error body of a raw response. */
const errorOf = (res: Response) =>
  call(() => res.json()).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(ErrorBody)),
    Effect.map((body) => ({ status: res.status, ...body.error }))
  )

const lastSend = (): { readonly chat: ResolvedChat; readonly message: UserMessage } => {
  const last = recorded.sends.at(-1)
  assert.isDefined(last)
  if (last === undefined) throw new Error("nothing sent")
  return last
}
const lastTarget = (): ChatTarget => {
  const last = recorded.targets.at(-1)
  if (last === undefined) throw new Error("nothing resolved")
  return last
}

const collectStream = (stream: AsyncIterable<ChatCompletionChunk>) =>
  call(async () => {
    const chunks: Array<ChatCompletionChunk> = []
    for await (const c of stream) chunks.push(c)
    return chunks
  })

const ChannelLayer = HttpChannel.layer({ port: 0 }).pipe(Layer.provide(fakeServices))

layer(ChannelLayer, { excludeTestServices: true })("HttpChannel", (it) => {
  it.effect("binds an ephemeral port on 127.0.0.1 and answers /health without auth", () =>
    Effect.gen(function*() {
      const address = yield* HttpAddress
      assert.strictEqual(address.host, "127.0.0.1")
      assert.isAbove(address.port, 0)
      assert.strictEqual(address.url, `http://127.0.0.1:${address.port}`)
      const res = yield* call(() => fetch(`${address.url}/health`))
      assert.strictEqual(res.status, 200)
      assert.deepStrictEqual(yield* call(() => res.json()), { ok: true })
    }))

  it.effect("non-streaming: a chat.completion with the echoed reply, stop and usage", () =>
    Effect.gen(function*() {
      resetRecorded()
      const base = yield* url
      const res = yield* call(() =>
        client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "hello there" }] })
      )
      assert.strictEqual(res.object, "chat.completion")
      assert.match(res.id, /^chatcmpl-[0-9a-f]{32}$/)
      assert.strictEqual(res.model, "default")
      assert.isAbove(res.created, 1_700_000_000)
      assert.strictEqual(res.choices.length, 1)
      assert.strictEqual(res.choices[0]?.message.role, "assistant")
      assert.strictEqual(res.choices[0]?.message.content, "alice|default|default: hello there")
      assert.strictEqual(res.choices[0]?.finish_reason, "stop")
      assert.deepStrictEqual(
        { p: res.usage?.prompt_tokens, c: res.usage?.completion_tokens, t: res.usage?.total_tokens },
        { p: 11, c: 7, t: 18 }
      )
      assert.deepStrictEqual(lastTarget(), {
        platform: "http",
        externalUserId: "alice",
        userId: "alice",
        userName: "Alice",
        chatId: "default",
        agentId: "default"
      })
      assert.strictEqual(lastSend().message, "hello there")
    }))

  it.effect("streaming: role chunk, one delta per text event, finish chunk, then [DONE]", () =>
    Effect.gen(function*() {
      const base = yield* url
      const stream = yield* call(() =>
        client(base).chat.completions.create({ model: "coder", messages: [{ role: "user", content: "stream me" }], stream: true })
      )
      const chunks = yield* collectStream(stream)
      assert.strictEqual(chunks[0]?.choices[0]?.delta.role, "assistant")
      assert.strictEqual(chunks[0]?.choices[0]?.delta.content, "")
      const deltas = chunks.slice(1, -1).map((c) => c.choices[0]?.delta.content)
      assert.deepStrictEqual(deltas, ["alice|default|coder: ", "stream ", "me"])
      const last = chunks.at(-1)
      assert.strictEqual(last?.choices[0]?.finish_reason, "stop")
      assert.deepStrictEqual(last?.choices[0]?.delta, {})
      for (const c of chunks) {
        assert.strictEqual(c.object, "chat.completion.chunk")
        assert.strictEqual(c.model, "coder")
        assert.strictEqual(c.id, chunks[0]?.id)
        assert.isFalse("usage" in c)
      }
    }))

  it.effect("streaming with include_usage: usage null on every chunk and a last usage chunk without choices", () =>
    Effect.gen(function*() {
      const base = yield* url
      const res = yield* call(() =>
        fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: "Bearer tok-alice", "content-type": "application/json" },
          body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "a b" }], stream: true, stream_options: { include_usage: true } })
        })
      )
      assert.strictEqual(res.status, 200)
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/)
      const text = yield* call(() => res.text())
      assert.isTrue(text.endsWith("data: [DONE]\n\n"))
      const events = text.split("\n\n").filter((e) => e !== "").map((e) => e.replace(/^data: /, ""))
      assert.strictEqual(events.at(-1), "[DONE]")
      const chunks = events.slice(0, -1).map((e): Record<string, unknown> => JSON.parse(e))
      for (const c of chunks.slice(0, -1)) assert.strictEqual(c["usage"], null)
      const usage = chunks.at(-1)
      assert.deepStrictEqual(usage?.["choices"], [])
      assert.deepStrictEqual(usage?.["usage"], { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, prompt_tokens_details: { cached_tokens: 3 } })
      assert.strictEqual(Array.isArray(chunks.at(-2)?.["choices"]), true)
    }))

  it.effect("streaming flushes each event as it comes (the client sees text before the turn ends)", () =>
    Effect.gen(function*() {
      const base = yield* url
      control.gate = Deferred.makeUnsafe<void>()
      const stream = yield* call(() =>
        client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "gate" }], stream: true })
      )
      const seen = yield* call(async () => {
        const out: Array<string> = []
        for await (const c of stream) {
          const delta = c.choices[0]?.delta.content
          if (delta !== undefined && delta !== null && delta !== "") out.push(delta)
          // The turn waits for the gate: reaching here means "before" was flushed on its own.
          if (delta === "before") Deferred.doneUnsafe(control.gate, Exit.void)
        }
        return out
      })
      assert.deepStrictEqual(seen, ["before", "after"])
    }))

  it.effect("notices are bracketed lines of a streamed answer; a turn that ends unavailable is an error, not a 200", () =>
    Effect.gen(function*() {
      const base = yield* url
      // Without streaming: the status and OpenAI error body, the notices as its message.
      const e = yield* failure(() => client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "notice" }] }))
      assert.instanceOf(e, OpenAI.APIError)
      if (!(e instanceof OpenAI.APIError)) return
      assert.strictEqual(e.status, 503)
      assert.strictEqual(e.code, "service_unavailable")
      assert.include(e.message, "sandbox unavailable")
      // Streaming: what came before is shown as it came, then the error frame makes the SDK throw.
      const stream = yield* call(() =>
        client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "notice" }], stream: true })
      )
      const chunks: Array<ChatCompletionChunk> = []
      const thrown = yield* failure(async () => {
        for await (const c of stream) chunks.push(c)
      })
      assert.instanceOf(thrown, OpenAI.APIError)
      assert.strictEqual(
        chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""),
        "[compacted 3 messages]\nalice|default|default: notice\n[sandbox unavailable]"
      )
    }))

  it.effect("a model stopped at its output cap finishes with length", () =>
    Effect.gen(function*() {
      const base = yield* url
      const res = yield* call(() => client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "long" }] }))
      assert.strictEqual(res.choices[0]?.finish_reason, "length")
      const chunks = yield* collectStream(
        yield* call(() => client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "long" }], stream: true }))
      )
      assert.strictEqual(chunks.at(-1)?.choices[0]?.finish_reason, "length")
    }))

  it.effect("models.list lists enabled agents as models; retrieve one", () =>
    Effect.gen(function*() {
      const base = yield* url
      const page = yield* call(() => client(base).models.list())
      assert.deepStrictEqual(page.data.map((m) => [m.id, m.object, m.owned_by]), [["default", "model", "anna"], ["coder", "model", "anna"]])
      assert.strictEqual(page.data[0]?.created, 1_700_000_000)
      const one = yield* call(() => client(base).models.retrieve("coder"))
      assert.strictEqual(one.id, "coder")
      const off = yield* failure(() => client(base).models.retrieve("off"))
      assert.instanceOf(off, OpenAI.NotFoundError)
    }))

  it.effect("a bad key is an AuthenticationError; a missing one a 401 with invalid_api_key", () =>
    Effect.gen(function*() {
      const base = yield* url
      const e = yield* failure(() => client(base, "nope").chat.completions.create({ model: "default", messages: [{ role: "user", content: "x" }] }))
      assert.instanceOf(e, OpenAI.AuthenticationError)
      if (e instanceof OpenAI.AuthenticationError) {
        assert.strictEqual(e.status, 401)
        assert.strictEqual(e.code, "invalid_api_key")
        assert.strictEqual(e.type, "invalid_request_error")
      }
      const listed = yield* failure(() => client(base, "nope").models.list())
      assert.instanceOf(listed, OpenAI.AuthenticationError)
      const body = yield* errorOf(yield* call(() => fetch(`${base}/v1/models`)))
      assert.strictEqual(body.status, 401)
      assert.strictEqual(body.code, "invalid_api_key")
      assert.strictEqual(body.type, "invalid_request_error")
      assert.match(body.message, /Authorization: Bearer/)
      assert.strictEqual(recorded.sends.filter((s) => s.message === "x").length, 0)
    }))

  it.effect("an unknown or disabled agent is a 404 model_not_found", () =>
    Effect.gen(function*() {
      const base = yield* url
      for (const model of ["gpt-4o", "off"]) {
        const e = yield* failure(() => client(base).chat.completions.create({ model, messages: [{ role: "user", content: "x" }] }))
        assert.instanceOf(e, OpenAI.NotFoundError)
        if (e instanceof OpenAI.NotFoundError) {
          assert.strictEqual(e.code, "model_not_found")
          assert.include(e.message, `\`${model}\``)
        }
      }
    }))

  it.effect("image content parts become image blocks (data URI), text parts text blocks; an http URL is refused by default", () =>
    Effect.gen(function*() {
      const base = yield* url
      const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
      const res = yield* call(() =>
        client(base).chat.completions.create({
          model: "default",
          messages: [{
            role: "user",
            content: [
              { type: "text", text: "what is this?" },
              { type: "image_url", image_url: { url: `data:image/png;base64,${png}`, detail: "high" } }
            ]
          }]
        })
      )
      assert.deepStrictEqual(lastSend().message, [
        { type: "text", text: "what is this?" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: png } }
      ])
      assert.strictEqual(res.choices[0]?.message.content, "alice|default|default: what is this? [image base64 image/png]")
      // Fetching image URLs is the operator's choice (http/imageUrls.test.ts): off by default.
      for (const image of ["https://example.com/cat.jpg", "file:///etc/passwd"]) {
        const bad = yield* failure(() =>
          client(base).chat.completions.create({
            model: "default",
            messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: image } }] }]
          })
        )
        assert.instanceOf(bad, OpenAI.BadRequestError)
      }
    }))

  it.effect("only the newest user message is sent; system/assistant/tool messages are ignored", () =>
    Effect.gen(function*() {
      const base = yield* url
      yield* call(() =>
        client(base).chat.completions.create({
          model: "default",
          messages: [
            { role: "system", content: "You are a pirate." },
            { role: "user", content: "first" },
            { role: "assistant", content: "reply" },
            { role: "user", content: "second" },
            { role: "assistant", content: "prefill" }
          ]
        })
      )
      assert.strictEqual(lastSend().message, "second")
      const e = yield* failure(() =>
        client(base).chat.completions.create({ model: "default", messages: [{ role: "system", content: "only system" }] })
      )
      assert.instanceOf(e, OpenAI.BadRequestError)
      if (e instanceof OpenAI.BadRequestError) assert.include(e.message, "no user message")
    }))

  it.effect("the session comes from X-Anna-Session, else the user field, else default", () =>
    Effect.gen(function*() {
      const base = yield* url
      const ask = (c: OpenAI, user?: string) =>
        call(() =>
          c.chat.completions.create({ model: "default", messages: [{ role: "user", content: "hi" }], ...(user === undefined ? {} : { user }) })
        ).pipe(Effect.map((r) => r.choices[0]?.message.content))
      assert.strictEqual(yield* ask(client(base), "work"), "alice|work|default: hi")
      assert.strictEqual(lastSend().chat.chatId, "work")
      assert.strictEqual(yield* ask(client(base, "tok-alice", { "X-Anna-Session": "travel" }), "work"), "alice|travel|default: hi")
      assert.strictEqual(yield* ask(client(base, "tok-bob")), "bob|default|default: hi")
      assert.strictEqual(yield* ask(client(base, "tok-bob"), "user:42 (mobile)"), "bob|user:42 (mobile)|default: hi")
      const bad = yield* failure(() =>
        client(base, "tok-alice", { "X-Anna-Session": "s".repeat(129) }).chat.completions.create({ model: "default", messages: [{ role: "user", content: "x" }] })
      )
      assert.instanceOf(bad, OpenAI.BadRequestError)
    }))

  it.effect("slash commands go to the runtime like any message", () =>
    Effect.gen(function*() {
      const base = yield* url
      const res = yield* call(() => client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "/new" }] }))
      assert.strictEqual(lastSend().message, "/new")
      assert.strictEqual(res.choices[0]?.message.content, "command /new done")
    }))

  it.effect("malformed JSON, wrong types and oversized bodies are 400/413 with OpenAI error bodies", () =>
    Effect.gen(function*() {
      const base = yield* url
      const post = (body: string) =>
        call(() =>
          fetch(`${base}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: "Bearer tok-alice", "content-type": "application/json" },
            body
          })
        ).pipe(Effect.flatMap(errorOf))
      const malformed = yield* post("{not json")
      assert.strictEqual(malformed.status, 400)
      assert.strictEqual(malformed.type, "invalid_request_error")
      assert.include(malformed.message, "could not parse the JSON body")
      const wrong = yield* post(JSON.stringify({ model: 42, messages: [] }))
      assert.strictEqual(wrong.status, 400)
      assert.include(wrong.message, "model")
      const stream = yield* post(JSON.stringify({ model: "default", messages: [{ role: "user", content: "x" }], stream: "yes" }))
      assert.strictEqual(stream.status, 400)
      assert.include(stream.message, "stream")
      const content = yield* post(JSON.stringify({ model: "default", messages: [{ role: "user", content: 7 }] }))
      assert.strictEqual(content.status, 400)
      assert.strictEqual(content.param, "messages")
      const big = yield* post(JSON.stringify({ model: "default", messages: [{ role: "user", content: "x".repeat(11 * 1024 * 1024) }] }))
      assert.strictEqual(big.status, 413)
      assert.strictEqual(big.code, "request_too_large")
      // The server is still fine afterwards.
      const ok = yield* call(() => client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "still here" }] }))
      assert.strictEqual(ok.choices[0]?.message.content, "alice|default|default: still here")
    }))

  it.effect("unknown routes and methods are 404s with an OpenAI error body", () =>
    Effect.gen(function*() {
      const base = yield* url
      for (const [method, path] of [["GET", "/v1/nope"], ["GET", "/v1/chat/completions"], ["POST", "/"]] as const) {
        const res = yield* call(() => fetch(`${base}${path}?x=1`, { method, headers: { authorization: "Bearer tok-alice" } }))
        const body = yield* errorOf(res)
        assert.strictEqual(body.status, 404)
        assert.strictEqual(body.message, `Invalid URL (${method} ${path})`)
      }
    }))

  it.effect("50 concurrent clients each get their own reply (streaming and not)", () =>
    Effect.gen(function*() {
      const base = yield* url
      const one = (i: number) =>
        Effect.gen(function*() {
          const c = client(base, `tok-user${i}`)
          const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: `msg ${i}` }]
          if (i % 2 === 0) {
            const r = yield* call(() => c.chat.completions.create({ model: "default", messages, user: `s${i}` }))
            return r.choices[0]?.message.content
          }
          const chunks = yield* collectStream(yield* call(() => c.chat.completions.create({ model: "coder", messages, user: `s${i}`, stream: true })))
          return chunks.map((ch) => ch.choices[0]?.delta.content ?? "").join("")
        })
      const replies = yield* Effect.all(Array.from({ length: 50 }, (_, i) => one(i)), { concurrency: "unbounded" })
      for (const [i, r] of replies.entries()) assert.strictEqual(r, `user${i}|s${i}|${i % 2 === 0 ? "default" : "coder"}: msg ${i}`)
    }))

  it.effect("a client that disconnects mid-stream stops the reading cleanly and does not abort the turn", () =>
    Effect.gen(function*() {
      const base = yield* url
      control.stopped = Deferred.makeUnsafe<void>()
      const abortsBefore = recorded.aborts
      const controller = new AbortController()
      const first = yield* call(async () => {
        const stream = await client(base).chat.completions.create(
          { model: "default", messages: [{ role: "user", content: "hang" }], stream: true },
          { signal: controller.signal }
        )
        for await (const c of stream) {
          const delta = c.choices[0]?.delta.content
          if (delta !== undefined && delta !== null && delta !== "") {
            controller.abort()
            return delta
          }
        }
        return undefined
      }).pipe(Effect.catch(() => Effect.succeed("aborted")))
      assert.oneOf(first, ["partial", "aborted"])
      // The server stops pulling the turn's events (the fake's stream is interrupted) …
      yield* Deferred.await(control.stopped)
      assert.strictEqual(recorded.aborts, abortsBefore)
      // … and keeps serving.
      const res = yield* call(() => client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "after" }] }))
      assert.strictEqual(res.choices[0]?.message.content, "alice|default|default: after")
    }))

  describe("Idempotency-Key (issue 28: a retried request runs its turn once)", () => {
    const post = (base: string, key: string | undefined, content: string, options: { stream?: boolean; token?: string; signal?: AbortSignal } = {}) =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${options.token ?? "tok-alice"}`,
          "content-type": "application/json",
          ...(key === undefined ? {} : { "idempotency-key": key })
        },
        body: JSON.stringify({ model: "default", messages: [{ role: "user", content }], ...(options.stream === true ? { stream: true } : {}) }),
        ...(options.signal === undefined ? {} : { signal: options.signal })
      })
    const completion = (res: Response) =>
      call(() => res.json() as Promise<{ id: string; choices: ReadonlyArray<{ message: { content: string } }> }>).pipe(
        Effect.map((body) => ({ status: res.status, replayed: res.headers.get("idempotent-replayed"), id: body.id, content: body.choices[0]?.message.content }))
      )
    /** The content a streamed answer's deltas spell, and its completion id. */
    const streamed = (res: Response) =>
      call(() => res.text()).pipe(Effect.map((text) => {
        const chunks = text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)) as ChatCompletionChunk)
        return { id: chunks[0]?.id, content: chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), done: text.endsWith("data: [DONE]\n\n") }
      }))

    it.effect("a retry with the same key gets the first answer again (same id), and the turn ran once", () =>
      Effect.gen(function*() {
        resetRecorded()
        const base = yield* url
        const first = yield* completion(yield* call(() => post(base, "k-once-1", "hello once")))
        const again = yield* completion(yield* call(() => post(base, "k-once-1", "hello once")))
        assert.deepStrictEqual(first, { status: 200, replayed: null, id: first.id, content: "alice|default|default: hello once" })
        assert.deepStrictEqual(again, { ...first, replayed: "true" })
        assert.strictEqual(recorded.sends.length, 1)
        // Without a key, or with another one, each request is a turn of its own.
        yield* call(() => post(base, undefined, "hello once"))
        yield* call(() => post(base, "k-once-2", "hello once"))
        assert.strictEqual(recorded.sends.length, 3)
        // Keys are the user's: Bob's "k-once-1" is not Alice's.
        const bob = yield* completion(yield* call(() => post(base, "k-once-1", "hello once", { token: "tok-bob" })))
        assert.strictEqual(bob.content, "bob|default|default: hello once")
        assert.strictEqual(recorded.sends.length, 4)
      }))

    it.effect("streamed: a retry replays the stream; another body under the key is refused (422); a bad key is 400", () =>
      Effect.gen(function*() {
        resetRecorded()
        const base = yield* url
        const first = yield* streamed(yield* call(() => post(base, "k-stream", "stream once", { stream: true })))
        const again = yield* streamed(yield* call(() => post(base, "k-stream", "stream once", { stream: true })))
        assert.deepStrictEqual(first, { id: first.id, content: "alice|default|default: stream once", done: true })
        assert.deepStrictEqual(again, first)
        assert.strictEqual(recorded.sends.length, 1)
        const other = yield* errorOf(yield* call(() => post(base, "k-stream", "something else")))
        assert.deepStrictEqual([other.status, other.code], [422, "idempotency_key_reused"])
        for (const bad of ["x".repeat(256), "two words"]) {
          const refused = yield* errorOf(yield* call(() => post(base, bad, "hi")))
          assert.strictEqual(refused.status, 400)
          assert.include(refused.message, "Idempotency-Key")
        }
        assert.strictEqual(recorded.sends.length, 1)
      }))

    it.effect("while the first is answered a retry gets 409 + Retry-After; a client gone mid-answer still leaves the whole answer for its retry", () =>
      Effect.gen(function*() {
        resetRecorded()
        const base = yield* url
        control.gate = Deferred.makeUnsafe<void>()
        const abort = new AbortController()
        const res = yield* call(() => post(base, "k-gate", "gate", { stream: true, signal: abort.signal }))
        assert.strictEqual(res.status, 200)
        const busy = yield* call(() => post(base, "k-gate", "gate", { stream: true }))
        assert.strictEqual(busy.status, 409)
        assert.strictEqual(busy.headers.get("retry-after"), "5")
        assert.strictEqual((yield* errorOf(busy)).code, "idempotency_key_in_use")
        // The client goes away before the answer ends; the turn ends after. A keyless request gone
        // right after it is the barrier: when its turn's stream has stopped, the server has handled
        // both disconnects (in the order the sockets closed), and only then does the turn go on.
        control.stopped = Deferred.makeUnsafe<void>()
        const second = new AbortController()
        const hung = yield* call(() => post(base, undefined, "hang", { stream: true, signal: second.signal }))
        assert.strictEqual(hung.status, 200)
        abort.abort()
        second.abort()
        yield* Deferred.await(control.stopped)
        yield* Deferred.succeed(control.gate, undefined)
        const replay = yield* Effect.gen(function*() {
          const r = yield* call(() => post(base, "k-gate", "gate", { stream: true }))
          if (r.status === 409) return yield* Effect.fail("still answering")
          return yield* streamed(r)
        }).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 250 }))
        assert.deepStrictEqual(replay.content, "beforeafter")
        assert.isTrue(replay.done)
        assert.strictEqual(recorded.sends.filter((x) => x.message === "gate").length, 1)
      }))

    it.effect("a turn that failed gives its key back: the retry runs it again", () =>
      Effect.gen(function*() {
        resetRecorded()
        const base = yield* url
        // "notice" ends unavailable (the sandbox was down): an error, not an answer.
        const failed = yield* call(() => post(base, "k-failed", "notice"))
        assert.strictEqual(failed.status, 503)
        const retried = yield* call(() => post(base, "k-failed", "notice"))
        assert.strictEqual(retried.status, 503)
        assert.isNull(retried.headers.get("idempotent-replayed"))
        assert.strictEqual(recorded.sends.length, 2)
      }))
  })
})

describe("HttpChannel on the real SQLite config", () => {
  it.live("a token issued by the ConfigStore authenticates its user; enabled agents are the models", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const stores = SqliteRuntimeConfig.layerWithStores("/srv/anna-home").pipe(Layer.provideMerge(Sqlite.layer(file)))
      yield* Effect.gen(function*() {
        const config = yield* ConfigStore
        const agents = yield* AgentStore
        yield* agents.create("helper", {})
        yield* agents.create("retired", {})
        yield* agents.update("retired", { enabled: false })
        yield* config.createUser("carol", "Carol")
        const token = yield* config.issueToken("carol", "laptop")
        const base = (yield* HttpAddress).url
        const models = yield* call(() => client(base, token).models.list())
        assert.deepStrictEqual(models.data.map((m) => m.id), ["helper"])
        const res = yield* call(() => client(base, token).chat.completions.create({ model: "helper", messages: [{ role: "user", content: "hi" }] }))
        assert.strictEqual(res.choices[0]?.message.content, "carol|default|helper: hi")
        const bad = yield* failure(() => client(base, `${token}x`).models.list())
        assert.instanceOf(bad, OpenAI.AuthenticationError)
        const off = yield* failure(() => client(base, token).chat.completions.create({ model: "retired", messages: [{ role: "user", content: "hi" }] }))
        assert.instanceOf(off, OpenAI.NotFoundError)
      }).pipe(Effect.provide(HttpChannel.layer({ port: 0 }).pipe(Layer.provideMerge(Layer.merge(stores, fakeRuntime)))))
    }))
})

describe("HttpChannel lifetime", () => {
  it.live("listens while its scope is open and refuses connections after it closes", () =>
    Effect.gen(function*() {
      const base = yield* Effect.scoped(Effect.gen(function*() {
        const address = yield* HttpAddress
        const res = yield* call(() => fetch(`${address.url}/health`))
        assert.strictEqual(res.status, 200)
        return address.url
      }).pipe(Effect.provide(ChannelLayer)))
      const after = yield* call(() => fetch(`${base}/health`)).pipe(Effect.result)
      assert.isTrue(after._tag === "Failure")
    }))

  it.live("a second server on a taken port fails to start with a ServeError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.scoped(Effect.gen(function*() {
        const address = yield* HttpAddress
        return yield* Effect.scoped(Layer.build(HttpChannel.layer({ port: address.port }).pipe(Layer.provide(fakeServices)))).pipe(Effect.exit)
      }).pipe(Effect.provide(ChannelLayer)))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "EADDRINUSE")
    }))

  it.live("closing lets a streamed answer in flight finish, then stops", () =>
    Effect.gen(function*() {
      control.gate = Deferred.makeUnsafe<void>()
      const started = Deferred.makeUnsafe<void>()
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(ChannelLayer, scope)
      const base = Context.get(context, HttpAddress).url
      const reading = yield* Effect.forkChild(call(async () => {
        const stream = await client(base).chat.completions.create({ model: "default", messages: [{ role: "user", content: "gate" }], stream: true })
        const out: Array<string> = []
        for await (const c of stream) {
          const delta = c.choices[0]?.delta.content
          if (delta !== undefined && delta !== null && delta !== "") out.push(delta)
          if (delta === "before") Deferred.doneUnsafe(started, Exit.void)
        }
        return out
      }))
      yield* Deferred.await(started)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      // New connections are refused (once the close has begun) while the answer in flight goes on.
      yield* call(() => fetch(`${base}/health`)).pipe(Effect.flip, Effect.retry({ times: 100, schedule: Schedule.spaced("10 millis") }))
      yield* Deferred.succeed(control.gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(reading), ["before", "after"])
      // … and the server is gone as soon as it ends (not when the client's keep-alive would expire).
      const finishing = Date.now()
      yield* Fiber.join(closing)
      assert.isBelow(Date.now() - finishing, 1_000)
    }))
})
