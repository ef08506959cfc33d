/**
 * Three gateways as one deployment (issue 28), as users run them: three `anna gateway` processes
 * (the built dist/main.js), each with its own ANNA_HOME, on one throwaway PostgreSQL, joined as a
 * cluster by ANNA_RUNNER_ADDRESS. An OpenAI client spreads sessions' turns over the three HTTP
 * channels: each session's turns run on the one node that owns it, in order, each once; `anna
 * cluster status` shows the nodes and their shards. The node polling Telegram is killed (`kill -9`)
 * half way through 2,000 turns: its sessions and singletons move, nothing is lost or doubled, and the
 * survivors stop cleanly on SIGTERM. Then: an owner frozen past its lease, nodes joining while turns
 * run, an owner stopped mid-turn.
 */
import { assert, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import { annaEnv, newHome } from "../support/cli.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { type Gateway, startGateway } from "../support/gateway.ts"
import { psqlStatement } from "../support/suiteDatabase.ts"
import { RESTARTED } from "../../src/domain/runtime/restart.ts"
import { startFakeTelegram } from "../support/fakeTelegram/server.ts"
import { freePort } from "../support/ports.ts"
import { postgresEnabled } from "../support/postgres.ts"
import { DB_PASSWORD, freshDatabaseUrl } from "../support/processDatabases.ts"

const suite = fakeLlmSuite()

const SHARDS = 60
/** The big run: sessions, turns each, sessions at a time (the HTTP channel takes 64 connections per client address). */
const HTTP_SESSIONS = 200
const TURNS = 10
const PARALLEL = 30
const TG_TOKEN = "777001:ClusterTestTokenClusterTestToken"

/** How long the join test's turns run: past effect/cluster's default entityTerminationTimeout (15 s). */
const LONG_TURN_MS = 16_000

interface Node extends Gateway {
  readonly id: string
  readonly home: string
}

interface Status {
  readonly nodes: ReadonlyArray<{
    readonly node: string
    readonly up: boolean
    readonly shards: number
    readonly sessions: number
    readonly singletons: ReadonlyArray<string>
  }>
  readonly up: number
  readonly shards: number
}

const until = async <A>(what: string, check: () => Promise<A | undefined>, timeoutMs = 30_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const found = await check()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** A cluster's environment on `database`: three-second leases, so failover is quick. */
const clusterEnv = (database: string) => ({
  ANNA_DATABASE_URL: database,
  OPENAI_BASE_URL: suite.fake.openAiUrl,
  OPENAI_API_KEY: "sk-cluster",
  ANNA_CLUSTER_SHARDS: String(SHARDS),
  ANNA_CLUSTER_LEASE_SECONDS: "3",
  ANNA_CLUSTER_SHUTDOWN_SECONDS: "10"
})

/** A gateway node of the cluster on `base.ANNA_DATABASE_URL`, started and listening. */
const startNode = async (base: Record<string, string>, id: string): Promise<Node> => {
  const home = suite.keep(newHome())
  const gateway = await startGateway(home, { ...base, ANNA_RUNNER_ADDRESS: `127.0.0.1:${await freePort()}`, ANNA_NODE_ID: id })
  assert.include(gateway.out(), `cluster: joined as node ${id}`)
  return { ...gateway, id, home }
}

/** Stops the nodes still running (SIGTERM): each must exit 0. */
const stopAll = async (running: ReadonlySet<Node>) => {
  for (const node of running) node.child.kill("SIGTERM")
  for (const node of running) assert.strictEqual((await node.done).code, 0, `${node.id}: ${node.out()}`)
}

/** The model holds every turn whose message starts with "long " until the gate opens; others answer at once. */
const holdLongTurns = () => {
  const held = gate()
  suite.fake.respondWith(async (req) => {
    if (lastUser(req).startsWith("long ")) await held.opened
    return countingReplies(req)
  })
  return held
}

/** `anna cluster status --json` on the database. */
const status = async (home: string, database: string): Promise<Status> => {
  const r = await annaEnv(home, { ANNA_DATABASE_URL: database }, "cluster", "status", "--json")
  assert.strictEqual(r.code, 0, r.stderr)
  return JSON.parse(r.stdout) as Status
}

/** An HTTP client: a user and their token. */
interface Client {
  readonly user: string
  readonly token: string
}

/**
 * The users the HTTP sessions belong to. A session is owned by the node that owns its workspace (the
 * agent's user's, in `user` mode): the sessions of USERS users spread over the nodes.
 */
const USERS = ["gina", "hal", "ivy", "jon", "kim", "lea", "max", "nia", "oto", "pam", "quin", "rui"]

/** The first node (it onboards from the environment), the agent with the memory tool only, and USERS with their tokens. */
const firstNode = async (base: Record<string, string>) => {
  const first = await startNode(base, "n1")
  assert.strictEqual((await annaEnv(first.home, base, "agent", "set", "default", "--tools", "memory")).code, 0)
  const clients = await Promise.all(USERS.map(async (user): Promise<Client> => {
    assert.strictEqual((await annaEnv(first.home, base, "user", "add", user)).code, 0)
    return { user, token: (await annaEnv(first.home, base, "user", "token", user)).stdout.trim() }
  }))
  /** The client session `i` belongs to. */
  const client = (i: number) => clients[i % clients.length] as Client
  return { first, client }
}

/** One turn through a node's HTTP channel (streamed or not), with an Idempotency-Key when given. */
const ask = async (node: Node, who: Client, session: string, content: string, stream: boolean, key?: string): Promise<string> => {
  const client = new OpenAI({ baseURL: node.url, apiKey: who.token, maxRetries: 0, ...(key === undefined ? {} : { defaultHeaders: { "idempotency-key": key } }) })
  if (!stream) {
    const r = await client.chat.completions.create({ model: "default", user: session, messages: [{ role: "user", content }] })
    return r.choices[0]?.message.content ?? ""
  }
  let text = ""
  const s = await client.chat.completions.create({ model: "default", user: session, stream: true, messages: [{ role: "user", content }] })
  for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? ""
  return text
}

/** Answers `reply #N`, N the number of user messages the model was given. */
const countingReplies = (req: { readonly body: unknown }) => {
  const messages = (req.body as { messages?: Array<{ role: string }> } | null)?.messages ?? []
  return { kind: "reply" as const, parts: [{ type: "text" as const, text: `reply #${messages.filter((m) => m.role === "user").length}` }] }
}

/** The text of the last user message a model request carried. */
const lastUser = (req: { readonly body: unknown }): string => {
  const messages = (req.body as { messages?: Array<{ role: string; content: unknown }> } | null)?.messages ?? []
  const m = messages.findLast((x) => x.role === "user")
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? "")
}

/** Which node's `cluster_nodes` row lists gina's HTTP session `session` as live. */
const ownerOf = (database: string, session: string): string =>
  psqlStatement(database, `SELECT node_id FROM cluster_nodes WHERE live::text LIKE '%"default:http:%:${session}"%'`).trim()

/** The session's stored messages, role and text, in order. */
const storedMessages = (database: string, session: string): Array<string> =>
  psqlStatement(database, `SELECT m.role || ': ' || m.text FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
    WHERE c.session_key LIKE 'default:http:%:${session}' ORDER BY m.seq`).trim().split("\n")

/** A promise and its resolver. */
const gate = () => {
  let open = () => {}
  const opened = new Promise<void>((r) => (open = r))
  return { opened, open }
}

if (postgresEnabled()) {
  describe("e2e: three gateways as one cluster on PostgreSQL", () => {
    it("spreads sessions over the nodes, one owner each; Telegram polled and a job run by one node; a killed node's work moves with nothing lost or doubled", async () => {
      const database = await freshDatabaseUrl()
      const base = clusterEnv(database)
      suite.fake.respondWith(countingReplies)
      const tg = await startFakeTelegram({ token: TG_TOKEN, botUsername: "cluster_bot" })
      const { first, client } = await firstNode(base)
      const cli = async (...args: Array<string>) => assert.strictEqual((await annaEnv(first.home, base, ...args)).code, 0, args.join(" "))
      await cli("channel", "set", "telegram", "--config", `token=${TG_TOKEN}`, "--config", `base_url=${tg.apiRoot}`)
      await cli("channel", "enable", "telegram")
      await cli("schedule", "add", "--agent", "default", "--every", "2s", "--prompt", "tick", "--user", "gina")
      const nodes = [first, await startNode(base, "n2"), await startNode(base, "n3")]
      const running = new Set(nodes)
      try {
        // Every shard is held, by all three.
        const joined = await until("three nodes holding every shard", async () => {
          const s = await status(first.home, database)
          return s.up === 3 && s.shards === SHARDS && s.nodes.every((n) => n.shards > 0) ? s : undefined
        })
        assert.deepStrictEqual(joined.nodes.map((n) => n.node), ["n1", "n2", "n3"])

        // Telegram: 20 chats write to the bot; one node polls, each message is answered once.
        const chats = Array.from({ length: 20 }, (_, i) => 5000 + i)
        for (const chat of chats) tg.sendUserMessage({ chatId: chat, chatType: "private", from: { id: chat }, text: `question 1 from ${chat}` })
        await tg.waitFor(() => chats.every((c) => tg.messages(c).length === 1), "every chat's first answer", 30_000)

        // The node polling Telegram is the one that will die, mid-run (with its sessions and whatever else it runs).
        const before = await status(first.home, database)
        const victimId = before.nodes.find((n) => n.singletons.includes("channels"))?.node
        assert.isDefined(victimId, JSON.stringify(before))
        const victim = nodes.find((n) => n.id === victimId) as Node
        const dead = new Set<Node>()

        // 200 sessions × 10 turns (every third streamed), PARALLEL sessions at a time, each turn entering
        // the next live node; every turn carries an Idempotency-Key, and a turn that fails (its node
        // died, its owner moved) is sent again with the same key to another node, as a client would.
        const sessions = Array.from({ length: HTTP_SESSIONS }, (_, i) => `trip-${i}`)
        let done = 0
        let retried = 0
        let killedAt = 0
        let slowest = 0
        const turnOnce = async (i: number, session: string, turn: number) => {
          const t0 = Date.now()
          for (let attempt = 0; ; attempt++) {
            const live = nodes.filter((n) => !dead.has(n))
            const node = live[(i + turn + attempt) % live.length] as Node
            const answer = await ask(node, client(i), session, `message ${turn} of ${session}`, turn % 3 === 0, `${session}-${turn}`).catch((e: unknown) => e)
            if (typeof answer === "string") {
              assert.strictEqual(answer, `reply #${turn}`, `${session} turn ${turn} on ${node.id}`)
              if (killedAt > 0 && t0 <= killedAt + 100) slowest = Math.max(slowest, Date.now() - t0)
              return
            }
            if (attempt >= 120) throw answer
            retried++
            await new Promise((r) => setTimeout(r, 250))
          }
        }
        let next = 0
        await Promise.all(Array.from({ length: PARALLEL }, async () => {
          while (next < sessions.length) {
            const i = next++
            const session = sessions[i] as string
            for (let turn = 1; turn <= TURNS; turn++) {
              await turnOnce(i, session, turn)
              // Half way through, the victim is killed.
              if (++done === (HTTP_SESSIONS * TURNS) / 2) {
                killedAt = Date.now()
                dead.add(victim)
                victim.child.kill("SIGKILL")
              }
            }
          }
        }))
        await victim.done
        running.delete(victim)
        const survivors = nodes.filter((n) => n !== victim)
        console.log(`cluster e2e: ${HTTP_SESSIONS * TURNS} turns; ${victim.id} killed half way (it ran ${before.nodes.find((n) => n.node === victim.id)?.sessions ?? 0} live sessions then); ${retried} retries; the slowest turn sent around the kill took ${(slowest / 1000).toFixed(1)} s`)
        // Every turn stored once, in order, answered once: each session is exactly its ten exchanges.
        const stored = psqlStatement(database, `SELECT c.session_key || '=' || string_agg(m.role || ':' || m.text, '|' ORDER BY m.seq)
          FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
          WHERE c.session_key LIKE 'default:http:%:trip-%' GROUP BY c.session_key`).trim().split("\n")
        assert.strictEqual(stored.length, HTTP_SESSIONS)
        for (const line of stored) {
          const [key, history] = line.split("=") as [string, string]
          const session = key.replace(/^default:http:[^:]+:/, "")
          const want = Array.from({ length: TURNS }, (_, k) => `user:message ${k + 1} of ${session}|assistant:reply #${k + 1}`).join("|")
          assert.strictEqual(history, want, key)
        }
        // The model was asked once per turn, but for turns cut by the kill (at most one per session running then).
        const asked = suite.fake.requests.filter((r) => /^message \d+ of trip-/.test(lastUser(r))).length
        assert.isAtLeast(asked, HTTP_SESSIONS * TURNS)
        assert.isAtMost(asked - HTTP_SESSIONS * TURNS, PARALLEL)

        // Telegram moved to a survivor: the second round of messages is answered once each.
        for (const chat of chats) tg.sendUserMessage({ chatId: chat, chatType: "private", from: { id: chat }, text: `question 2 from ${chat}` })
        await tg.waitFor(() => chats.every((c) => tg.messages(c).length === 2), "every chat's second answer", 30_000)
        for (const chat of chats) assert.deepStrictEqual(tg.messages(chat).map((m) => m.text), ["reply #1", "reply #2"], `chat ${chat}`)
        // Never two pollers at once: Telegram ends the older getUpdates with 409 when a second one comes.
        assert.deepStrictEqual(tg.callsTo("getUpdates").filter((c) => c.status === 409).length, 0)

        // The survivors hold every shard; the dead node is reported down.
        const after = await until("two nodes holding every shard, the dead one down", async () => {
          const s = await status(first === victim ? (survivors[0] as Node).home : first.home, database)
          return s.up === 2 && s.shards === SHARDS && s.nodes.some((n) => n.node === victim.id && !n.up) ? s : undefined
        })
        assert.strictEqual(after.nodes.length, 3)
        const verify = await annaEnv((survivors[0] as Node).home, { ANNA_DATABASE_URL: database }, "memory", "verify")
        assert.strictEqual(verify.code, 0, verify.stdout + verify.stderr)
        // The job every 2 s ran once per tick across the cluster, before and after the kill: no two
        // runs started within half an interval of each other.
        const starts = psqlStatement(database, "SELECT started_at FROM scheduler_runs WHERE trigger <> 'heartbeat' ORDER BY started_at").trim().split("\n").map(Number)
        assert.isAtLeast(starts.length, 5)
        const gaps = starts.slice(1).map((t, i) => t - (starts[i] ?? 0))
        assert.isTrue(gaps.every((g) => g >= 1_000), `runs' gaps: ${gaps.join(", ")}`)
      } finally {
        await tg.close()
        await stopAll(running)
        for (const node of running) assert.notInclude(node.out(), DB_PASSWORD)
      }
    }, 400_000)

    it("a Telegram reply whose session's node dies mid-answer is rewritten in place: the restart said, then the new owner's whole answer", async () => {
      const database = await freshDatabaseUrl()
      const base = clusterEnv(database)
      const tg = await startFakeTelegram({ token: TG_TOKEN, botUsername: "cluster_bot" })
      let cut = false
      suite.fake.respondWith((req) => {
        // The first answer to the long question streams its beginning, then stalls: its node dies meanwhile.
        if (lastUser(req) === "the long question" && !cut) {
          cut = true
          return { kind: "disconnect", parts: [{ type: "text", text: "An old beginning that its node never finished" }], afterEvents: 4, stall: true }
        }
        return countingReplies(req)
      })
      const { first } = await firstNode(base)
      const cli = async (...args: Array<string>) => assert.strictEqual((await annaEnv(first.home, base, ...args)).code, 0, args.join(" "))
      await cli("channel", "set", "telegram", "--config", `token=${TG_TOKEN}`, "--config", `base_url=${tg.apiRoot}`)
      await cli("channel", "enable", "telegram")
      const nodes = [first, await startNode(base, "n2")]
      const running = new Set(nodes)
      try {
        // Where the channels run once the shards have settled (a singleton moves with its shard when n2 joins).
        const runnerOf = (s: Status) => s.nodes.find((n) => n.singletons.includes("channels"))?.node
        let seen: Array<string | undefined> = []
        const poller = await until("the channels settled on one node", async () => {
          const s = await status(first.home, database)
          const settled = s.up === 2 && s.shards === SHARDS && s.nodes.every((n) => n.shards > 0)
          seen = settled ? [...seen, runnerOf(s)].slice(-8) : []
          await new Promise((r) => setTimeout(r, 500))
          return seen.length === 8 && seen.every((n) => n !== undefined && n === seen[0]) ? seen[0] : undefined
        }, 60_000)
        const other = nodes.find((n) => n.id !== poller) as Node
        // A chat whose session the node that does not poll Telegram owns.
        let chat = 0
        for (let i = 0; chat === 0 && i < 40; i++) {
          const id = 7000 + i
          tg.sendUserMessage({ chatId: id, chatType: "private", from: { id }, text: "hello" })
          await tg.waitFor(() => tg.messages(id).length === 1, `chat ${id}'s first answer`, 30_000)
          const owner = await until("the chat's owner listed", async () =>
            psqlStatement(database, `SELECT n.node_id FROM cluster_nodes n, user_identities i
              WHERE i.platform = 'telegram' AND i.external_id = '${id}' AND n.live::text LIKE '%"default:telegram:' || i.user_id || ':dm"%'`).trim() || undefined, 10_000)
          if (owner === other.id) chat = id
        }
        assert.notStrictEqual(chat, 0, `no chat's session landed on ${other.id}`)
        tg.sendUserMessage({ chatId: chat, chatType: "private", from: { id: chat }, text: "the long question" })
        // The beginning is shown as it streams; then its node is killed.
        await tg.waitFor(() => tg.messages(chat)[1]?.text.startsWith("An old"), "the streamed beginning", 30_000)
        // The node that dies is the session's owner alone: the channels (and the waiting reply) stay where they are.
        assert.strictEqual(runnerOf(await status(first.home, database)), poller)
        other.child.kill("SIGKILL")
        await other.done
        running.delete(other)
        const answer = await tg.waitFor(() => {
          const m = tg.messages(chat)[1]
          return m?.text === "reply #2" ? m : undefined
        }, "the answer rewritten by the new owner", 60_000).catch((e: unknown) => {
          throw new Error(`${String(e)}; the chat's messages: ${JSON.stringify(tg.messages(chat).map((m) => m.history.map((v) => v.text)))}`)
        })
        // The same message, rewritten: the beginning, the restart said, the whole new answer — nothing sent twice.
        const versions = answer.history.map((v) => v.text)
        assert.isTrue(versions[0]?.startsWith("An old"), versions.join(" / "))
        assert.include(versions, `[${RESTARTED}]`, versions.join(" / "))
        assert.isBelow(versions.indexOf(`[${RESTARTED}]`), versions.indexOf("reply #2"), versions.join(" / "))
        assert.strictEqual(tg.messages(chat).length, 2)
        const user = psqlStatement(database, `SELECT user_id FROM user_identities WHERE platform = 'telegram' AND external_id = '${chat}'`).trim()
        const key = `default:telegram:${user}:dm`
        assert.deepStrictEqual(
          psqlStatement(database, `SELECT m.role || ': ' || m.text FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
            WHERE c.session_key = '${key}' ORDER BY m.seq`).trim().split("\n"),
          ["user: hello", "assistant: reply #1", "user: the long question", "assistant: reply #2"]
        )
      } finally {
        await tg.close()
        await stopAll(running)
      }
    }, 180_000)

    it("a session's owner frozen past its lease (SIGSTOP, then SIGCONT) ends with one answer: the thawed node's writes are fenced off", async () => {
      const database = await freshDatabaseUrl()
      const base = clusterEnv(database)
      const held = gate()
      let heldOnce = false
      suite.fake.respondWith(async (req) => {
        if (lastUser(req) === "the frozen question" && !heldOnce) {
          heldOnce = true
          await held.opened
        }
        return countingReplies(req)
      })
      const { first, client } = await firstNode(base)
      const second = await startNode(base, "n2")
      const nodes = [first, second]
      const running = new Set(nodes)
      try {
        await until("both nodes holding shards", async () => {
          const s = await status(first.home, database)
          return s.up === 2 && s.shards === SHARDS && s.nodes.every((n) => n.shards > 0) ? s : undefined
        })
        // A session owned by n2, entered through n1.
        let session = ""
        let who = client(0)
        for (let i = 0; session === "" && i < 3 * USERS.length; i++) {
          assert.strictEqual(await ask(first, client(i), `freeze-${i}`, "hello", false), "reply #1")
          const owner = await until("the session's owner listed", async () => ownerOf(database, `freeze-${i}`) || undefined, 10_000)
          if (owner === "n2") [session, who] = [`freeze-${i}`, client(i)]
        }
        assert.notStrictEqual(session, "", "no user's workspace landed on n2")
        const before = suite.fake.requests.length
        const answer = ask(first, who, session, "the frozen question", false, "frozen-1").catch((e: unknown) => `failed: ${String(e)}`)
        await suite.fake.when(() => suite.fake.requests.length > before, { what: "the owner's model call" })
        second.child.kill("SIGSTOP")
        // n1 takes n2's shards once n2's lease has run out.
        await until("n1 holding every shard", async () => {
          const s = await status(first.home, database)
          return s.nodes.find((n) => n.node === "n1")?.shards === SHARDS ? s : undefined
        })
        // The user writes again: n1 now owns the session and answers (the frozen question is stored, unanswered).
        assert.strictEqual(await ask(first, who, session, "are you there?", false), "reply #3")
        // The zombie thaws and its held model call answers: its write of that answer is refused, and
        // the request it was answering fails (the client may retry it).
        second.child.kill("SIGCONT")
        held.open()
        assert.match(await answer, /^failed/)
        assert.deepStrictEqual(storedMessages(database, session), [
          "user: hello",
          "assistant: reply #1",
          "user: the frozen question",
          "user: are you there?",
          "assistant: reply #3"
        ])
        const verify = await annaEnv(first.home, { ANNA_DATABASE_URL: database }, "memory", "verify")
        assert.strictEqual(verify.code, 0, verify.stdout + verify.stderr)
      } finally {
        held.open()
        second.child.kill("SIGCONT")
        await stopAll(running)
      }
    }, 180_000)

    it("a node joining while turns run lets them finish where they run: each answered once", async () => {
      const database = await freshDatabaseUrl()
      // Turns may run up to a minute past a shard's move (effect/cluster's own default is 15 s).
      const base = { ...clusterEnv(database), ANNA_CLUSTER_SHUTDOWN_SECONDS: "60" }
      const held = holdLongTurns()
      const { first, client } = await firstNode(base)
      const running = new Set([first])
      try {
        await until("n1 holding every shard", async () => ((await status(first.home, database)).shards === SHARDS ? true : undefined))
        const sessions = Array.from({ length: 12 }, (_, i) => `join-${i}`)
        const before = suite.fake.requests.length
        const startedAt = Date.now()
        const answers = Promise.all(sessions.map((s, i) => ask(first, client(i), s, `long ${s}`, i % 2 === 0)))
        await suite.fake.when(() => suite.fake.requests.length - before === sessions.length, { what: "every long turn's model call" })
        // Two nodes join mid-turn: shards move to them, but the turns running on n1 are not moved.
        const joined = [await startNode(base, "n2"), await startNode(base, "n3")]
        for (const n of joined) running.add(n)
        await until("three nodes holding shards", async () => {
          const s = await status(first.home, database)
          return s.up === 3 && s.nodes.every((n) => n.shards > 0) ? s : undefined
        })
        // The turns are long ones: longer than effect/cluster's default 15 s for an entity to finish.
        await new Promise((r) => setTimeout(r, Math.max(0, LONG_TURN_MS - (Date.now() - startedAt))))
        held.open()
        assert.deepStrictEqual(await answers, sessions.map(() => "reply #1"))
        // Each long turn asked the model once: none was restarted on a new owner.
        assert.strictEqual(suite.fake.requests.length - before, sessions.length)
        for (const s of sessions) assert.deepStrictEqual(storedMessages(database, s), [`user: long ${s}`, "assistant: reply #1"])
        // The sessions now answer on whichever node owns them, with their history.
        for (const [i, s] of sessions.entries()) assert.strictEqual(await ask(joined[i % 2] as Node, client(i), s, "again", false), "reply #2")
      } finally {
        held.open()
        await stopAll(running)
      }
    }, 180_000)

    it("a node stopped with SIGTERM while its sessions' turns run lets them finish, then hands the sessions over (a rolling restart)", async () => {
      const database = await freshDatabaseUrl()
      const base = { ...clusterEnv(database), ANNA_CLUSTER_SHUTDOWN_SECONDS: "60" }
      const held = holdLongTurns()
      const { first, client } = await firstNode(base)
      const second = await startNode(base, "n2")
      const running = new Set([first, second])
      try {
        await until("both nodes holding shards", async () => {
          const s = await status(first.home, database)
          return s.up === 2 && s.shards === SHARDS && s.nodes.every((n) => n.shards > 0) ? s : undefined
        })
        // Sessions owned by n2, each started with one turn through n1.
        const owned: Array<number> = []
        for (let i = 0; owned.length < 4 && i < 40; i++) {
          assert.strictEqual(await ask(first, client(i), `roll-${i}`, "hello", false), "reply #1")
          if ((await until("the owner listed", async () => ownerOf(database, `roll-${i}`) || undefined, 10_000)) === "n2") owned.push(i)
        }
        assert.strictEqual(owned.length, 4)
        const before = suite.fake.requests.length
        const answers = Promise.all(owned.map((i, k) => ask(first, client(i), `roll-${i}`, `long roll-${i}`, k % 2 === 0)))
        await suite.fake.when(() => suite.fake.requests.length - before === owned.length, { what: "the long turns' model calls" })
        // n2 is asked to stop mid-turn: it waits for them.
        second.child.kill("SIGTERM")
        await until("n2 stopping", async () => (second.out().includes("anna gateway: stopping") ? true : undefined), 10_000)
        held.open()
        assert.deepStrictEqual(await answers, owned.map(() => "reply #2"))
        assert.strictEqual((await second.done).code, 0, second.out())
        running.delete(second)
        // Each long turn ran once; the sessions answer on n1 now, with their history.
        assert.strictEqual(suite.fake.requests.length - before, owned.length)
        for (const i of owned) assert.strictEqual(await ask(first, client(i), `roll-${i}`, "again", false), "reply #3")
        for (const i of owned) {
          assert.deepStrictEqual(storedMessages(database, `roll-${i}`), ["user: hello", "assistant: reply #1", `user: long roll-${i}`, "assistant: reply #2", "user: again", "assistant: reply #3"])
        }
      } finally {
        held.open()
        await stopAll(running)
      }
    }, 180_000)
  })
}
