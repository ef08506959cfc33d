/**
 * Issue 12's restart test for QQ, through real gateway processes: 20 QQ users write to the bot (C2C,
 * the fake QQ Bot API, `base_url` and `token_url` pointed at it); every answer is mid-stream when the
 * gateway is killed with SIGKILL (the model stalls; QQ cannot edit a message, so nothing of it is on
 * the platform yet). After a restart with a working model, every inbound message must end with
 * exactly one complete reply: its three parts as passive replies to that message with msg_seq 1, 2,
 * 3, none sent twice (also when QQ pushes the messages again), none lost; memory holds each question
 * and each answer once.
 *
 * The second test kills the gateway between the parts of finished replies (a proxy in front of the
 * fake holds every msg_seq 2): the restart sends parts 2 and 3 of the answer the first life gave,
 * without asking the model again (it would now answer otherwise), and memory holds it once.
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../../support/cli.ts"
import type { RecordedRequest } from "../../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { type FakeQq, startFakeQq } from "../../support/fakeQq/server.ts"
import { readRows, until } from "../../support/gatewayDb.ts"

const suite = fakeLlmSuite()
const USERS = 20

let qq: FakeQq
beforeEach(async () => {
  qq = await startFakeQq()
})
afterEach(async () => {
  await qq.close()
})

const userText = (r: RecordedRequest): string => {
  const messages = (r.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> } | null)?.messages ?? []
  const last = [...messages].reverse().find((m) => m.role === "user")
  return typeof last?.content === "string" ? last.content : ""
}

/** Three paragraphs of ~1,500 characters: three QQ messages (2,000 characters at most each). */
const part = (q: string, n: number) => `Part ${n} of the answer to "${q}": ${"and so on ".repeat(150).trim()}.`
const full = (q: string) => [1, 2, 3].map((n) => part(q, n)).join("\n\n")



const user = (i: number) => `QQUSER${String(i).padStart(4, "0")}`

/**
 * An HTTP proxy in front of the fake QQ's API (the gateway's `base_url`): while `hold` is on, a
 * passive reply with msg_seq 2 or more is never answered nor passed on (the platform stalls between
 * the parts of a reply); everything else goes through as it is.
 */
const startHoldingProxy = async (target: string) => {
  let hold = true
  let held = 0
  const read = (req: IncomingMessage): Promise<Buffer> =>
    new Promise((done, fail) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => done(Buffer.concat(chunks)))
      req.on("error", fail)
    })
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await read(req)
      if (hold && req.method === "POST" && /\/messages$/.test(req.url ?? "")) {
        const seq = (JSON.parse(body.toString("utf8")) as { msg_seq?: number }).msg_seq ?? 1
        if (seq >= 2) {
          held++
          return
        }
      }
      const headers: Record<string, string> = {}
      for (const h of ["authorization", "content-type"]) {
        const v = req.headers[h]
        if (typeof v === "string") headers[h] = v
      }
      const answer = await fetch(`${target}${req.url ?? "/"}`, { method: req.method ?? "GET", headers, ...(req.method === "POST" ? { body } : {}) })
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" })
      res.end(Buffer.from(await answer.arrayBuffer()))
    })().catch(() => res.destroy())
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", () => done()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held,
    release: () => {
      hold = false
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections()
        server.close(() => done())
      })
  }
}

describe("e2e: QQ replies survive a SIGKILL", () => {
  it("every inbound message gets exactly one complete reply (msg_seq 1, 2, 3) after a kill mid-turn and a restart", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const db = join(home, "anna.db")
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-qq" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      expect(r.code, `anna ${args.join(" ")}: ${r.stderr}`).toBe(0)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    // Tools that need no Docker (else every answer ends with a notice that tools are off).
    await cli("agent", "set", "default", "--tools", "notify")
    await cli(
      "channel", "set", "qq",
      "--config", `app_id=${qq.appId}`,
      "--config", `app_secret=${qq.secret}`,
      "--config", `base_url=${qq.baseUrl}`,
      "--config", `token_url=${qq.tokenUrl}`
    )
    await cli("channel", "enable", "qq")
    await cli("channel", "disable", "http")

    // First life: every answer starts streaming, then the model stalls.
    fake.respondWith((req) => ({ kind: "disconnect", parts: [{ type: "text", text: full(userText(req)) }], afterEvents: 4, stall: true }))
    const first = start(home, ["gateway"], "info", env)
    const firstDone = finish(first)
    await waitForOutput(first, "press Ctrl+C")
    await qq.waitFor(() => qq.connected, "the gateway session", 30_000)
    const asked = Array.from({ length: USERS }, (_, i) => qq.sendUserMessage({ user: user(i + 1), content: `question ${i + 1}` }))
    await fake.when(
      () => Array.from({ length: USERS }, (_, i) => fake.requests.some((r) => userText(r) === `question ${i + 1}`)).every(Boolean),
      { what: "every question's turn streaming", timeoutMs: 60_000 }
    )
    await until(
      () => Number(readRows(db, "SELECT count(*) AS n FROM channel_inbound WHERE channel = 'qq' AND answered_at IS NULL")[0]?.["n"]) === USERS,
      "every message claimed and open"
    )
    first.kill("SIGKILL")
    await firstDone
    // QQ cannot edit: nothing of a reply is sent before the turn is done.
    expect(qq.allMessages).toEqual([])
    const identifies = qq.sessions.filter((s) => s.op === 2).length

    // Second life: the model answers; the channel finishes what the first one began.
    fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: full(userText(req)) }], chunk: 500 }))
    const second = start(home, ["gateway"], "info", env)
    let secondLog = ""
    second.stderr?.on("data", (d: Buffer) => (secondLog += d.toString()))
    const secondDone = finish(second)
    try {
      await waitForOutput(second, "press Ctrl+C")
      await qq.waitFor(
        () => Array.from({ length: USERS }, (_, i) => qq.messages(user(i + 1)).length >= 3).every(Boolean),
        "every reply complete",
        90_000
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${secondLog}`)
      })
      // The saved gateway session was resumed (QQ replays what came after the saved seq), not identified anew.
      expect(qq.sessions.filter((s) => s.op === 2).length).toBe(identifies)
      expect(qq.sessions.at(-1)?.op).toBe(6)
      // QQ pushes the 20 messages again (a duplicate delivery after the restart): nothing is answered twice.
      for (const m of asked) qq.redeliver(m.id)
      // A further message is answered as usual, after the duplicates (dispatches come in order).
      const more = qq.sendUserMessage({ user: user(1), content: "one more" })
      await qq.waitFor(() => qq.messages(user(1)).length >= 6, "the answer to one more", 60_000)
      expect(qq.messages(user(1)).slice(3).map((m) => [m.msgId, m.msgSeq, m.content])).toEqual(
        [1, 2, 3].map((n) => [more.id, n, part("one more", n)])
      )
      await until(
        () => Number(readRows(db, "SELECT count(*) AS n FROM channel_inbound WHERE channel = 'qq' AND answered_at IS NULL")[0]?.["n"]) === 0,
        "every message answered in the ledger"
      )
    } finally {
      second.kill("SIGTERM")
    }
    expect((await secondDone).code).toBe(0)
    for (let i = 0; i < USERS; i++) {
      const sent = qq.messages(user(i + 1))
      const q = `question ${i + 1}`
      expect(
        sent.slice(0, 3).map((m) => [m.msgId, m.msgSeq, m.msgType, m.content]),
        user(i + 1)
      ).toEqual([1, 2, 3].map((n) => [asked[i]?.id, n, 0, part(q, n)]))
      expect(sent.length, `${user(i + 1)}: ${JSON.stringify(sent.map((m) => m.content.slice(0, 60)))}`).toBe(i === 0 ? 6 : 3)
    }
    // No refused send on the way (a repeated msg_seq would be refused with 40054005).
    expect(qq.calls.filter((c) => c.path.endsWith("/messages") && c.status !== 200)).toEqual([])
    // Memory holds each question once, answered once: the resumed turn did not store it again.
    const rows = readRows(
      db,
      "SELECT m.text AS text, m.role AS role FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id WHERE c.session_key LIKE '%:qq:%' ORDER BY c.id, m.seq"
    )
    for (let i = 1; i <= USERS; i++) {
      expect(rows.filter((r) => r["role"] === "user" && r["text"] === `question ${i}`).length, `question ${i} stored once`).toBe(1)
      expect(rows.filter((r) => r["role"] === "assistant" && r["text"] === full(`question ${i}`)).length, `answer ${i} stored once`).toBe(1)
    }
  }, 240_000)
})

describe("e2e: QQ replies cut between their parts survive a SIGKILL", () => {
  it("a reply whose first part was sent before the kill is finished with the same answer's other parts (msg_seq 2, 3), the model not asked again", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const db = join(home, "anna.db")
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-qq" }
    const proxy = await startHoldingProxy(qq.baseUrl)
    try {
      const cli = async (...args: Array<string>) => {
        const r = await annaEnv(home, env, ...args)
        expect(r.code, `anna ${args.join(" ")}: ${r.stderr}`).toBe(0)
        return r.stdout
      }
      await cli("onboard", "--from-env")
      await cli("agent", "set", "default", "--tools", "notify")
      await cli(
        "channel", "set", "qq",
        "--config", `app_id=${qq.appId}`,
        "--config", `app_secret=${qq.secret}`,
        "--config", `base_url=${proxy.url}`,
        "--config", `token_url=${qq.tokenUrl}`
      )
      await cli("channel", "enable", "qq")
      await cli("channel", "disable", "http")

      // First life: every turn is done; each reply's first part reaches QQ, the platform stalls on the second.
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: full(userText(req)) }] }))
      const first = start(home, ["gateway"], "info", env)
      const firstDone = finish(first)
      await waitForOutput(first, "press Ctrl+C")
      await qq.waitFor(() => qq.connected, "the gateway session", 30_000)
      const asked = Array.from({ length: USERS }, (_, i) => qq.sendUserMessage({ user: user(i + 1), content: `question ${i + 1}` }))
      await qq.waitFor(() => Array.from({ length: USERS }, (_, i) => qq.messages(user(i + 1)).length === 1).every(Boolean), "a first part for every user", 60_000)
      await until(
        () => Number(readRows(db, "SELECT count(*) AS n FROM channel_inbound WHERE channel = 'qq' AND reply != '[]'")[0]?.["n"]) === USERS,
        "every reply's first part on record"
      )
      await until(() => proxy.held() >= USERS, "every second part held")
      first.kill("SIGKILL")
      await firstDone
      const modelCalls = fake.requests.filter((r) => r.method === "POST").length
      for (let i = 1; i <= USERS; i++) expect(qq.messages(user(i)).map((m) => m.content)).toEqual([part(`question ${i}`, 1)])

      // Second life: the platform takes everything; the model would now say something else.
      proxy.release()
      fake.respondWith((req) => ({ kind: "reply", parts: [{ type: "text", text: `Another answer to "${userText(req)}".` }] }))
      const second = start(home, ["gateway"], "info", env)
      let secondLog = ""
      second.stderr?.on("data", (d: Buffer) => (secondLog += d.toString()))
      const secondDone = finish(second)
      try {
        await waitForOutput(second, "press Ctrl+C")
        await until(
          () => Number(readRows(db, "SELECT count(*) AS n FROM channel_inbound WHERE channel = 'qq' AND answered_at IS NULL")[0]?.["n"]) === 0,
          "every message answered in the ledger",
          60_000
        ).catch((e: unknown) => {
          throw new Error(`${String(e)}\n${secondLog}`)
        })
      } finally {
        second.kill("SIGTERM")
      }
      expect((await secondDone).code).toBe(0)
      for (let i = 0; i < USERS; i++) {
        const sent = qq.messages(user(i + 1))
        expect(sent.map((m) => [m.msgId, m.msgSeq, m.content]), user(i + 1)).toEqual(
          [1, 2, 3].map((n) => [asked[i]?.id, n, part(`question ${i + 1}`, n)])
        )
      }
      // The answers were given in the first life: the model was not asked again.
      expect(fake.requests.filter((r) => r.method === "POST").length).toBe(modelCalls)
      const rows = readRows(
        db,
        "SELECT m.text AS text, m.role AS role FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id WHERE c.session_key LIKE '%:qq:%' ORDER BY c.id, m.seq"
      )
      for (let i = 1; i <= USERS; i++) {
        expect(rows.filter((r) => r["role"] === "user" && r["text"] === `question ${i}`).length, `question ${i} stored once`).toBe(1)
        expect(rows.filter((r) => r["role"] === "assistant").map((r) => r["text"]).filter((t) => String(t).includes(`"question ${i}"`)), `answer ${i} stored once`).toEqual([
          full(`question ${i}`)
        ])
      }
    } finally {
      await proxy.close()
    }
  }, 240_000)
})
