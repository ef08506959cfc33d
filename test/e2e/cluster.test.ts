/**
 * Three gateways as one deployment (issue 28), as users run them: three `anna gateway` processes
 * (the built dist/main.js), each with its own ANNA_HOME, on one throwaway PostgreSQL, joined as a
 * cluster by ANNA_RUNNER_ADDRESS. An OpenAI client spreads sessions' turns over the three HTTP
 * channels: each session's turns run on the one node that owns it, in order, each once; `anna
 * cluster status` shows the nodes and their shards. Then the node holding the most sessions is
 * killed (`kill -9`): its sessions move, their next turns are answered with their history whole,
 * and the survivors stop cleanly on SIGTERM.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import OpenAI from "openai"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { freePort } from "../support/ports.ts"
import { postgresEnabled } from "../support/postgres.ts"
import { DB_PASSWORD, freshDatabaseUrl } from "../support/processDatabases.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const SHARDS = 60

interface Node {
  readonly id: string
  readonly home: string
  readonly url: string
  readonly child: ReturnType<typeof start>
  readonly done: ReturnType<typeof finish>
  out: () => string
}

interface Status {
  readonly nodes: ReadonlyArray<{ readonly node: string; readonly up: boolean; readonly shards: number; readonly sessions: number }>
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

if (postgresEnabled()) {
  describe("e2e: three gateways as one cluster on PostgreSQL", () => {
    it("spreads sessions over the nodes, one owner each; a killed node's sessions move with their history", async () => {
      const database = await freshDatabaseUrl()
      const base = {
        ANNA_DATABASE_URL: database,
        OPENAI_BASE_URL: fake.openAiUrl,
        OPENAI_API_KEY: "sk-cluster",
        ANNA_CLUSTER_SHARDS: String(SHARDS),
        ANNA_CLUSTER_LEASE_SECONDS: "3",
        ANNA_CLUSTER_SHUTDOWN_SECONDS: "10"
      }
      fake.respondWith((req) => {
        const messages = (req.body as { messages?: Array<{ role: string }> }).messages ?? []
        return { kind: "reply", parts: [{ type: "text", text: `reply #${messages.filter((m) => m.role === "user").length}` }] }
      })
      const startNode = async (id: string): Promise<Node> => {
        const home = newHome()
        homes.push(home)
        const env = { ...base, ANNA_RUNNER_ADDRESS: `127.0.0.1:${await freePort()}`, ANNA_NODE_ID: id }
        const child = start(home, ["gateway", "--port", "0"], "info", env)
        let out = ""
        child.stdout?.on("data", (d: Buffer) => (out += d.toString()))
        child.stderr?.on("data", (d: Buffer) => (out += d.toString()))
        const done = finish(child)
        await waitForOutput(child, "press Ctrl+C")
        const url = /HTTP channel \(OpenAI-compatible\) on (\S+);/.exec(out)?.[1]
        if (url === undefined) throw new Error(`no HTTP channel address in:\n${out}`)
        assert.include(out, `cluster: joined as node ${id}`)
        return { id, home, url, child, done, out: () => out }
      }
      const status = async (home: string): Promise<Status> => {
        const r = await annaEnv(home, { ANNA_DATABASE_URL: database }, "cluster", "status", "--json")
        assert.strictEqual(r.code, 0, r.stderr)
        return JSON.parse(r.stdout) as Status
      }

      // The first node onboards from the environment; the others find the provider and agent there.
      const first = await startNode("n1")
      assert.strictEqual((await annaEnv(first.home, base, "agent", "set", "default", "--tools", "memory")).code, 0)
      assert.strictEqual((await annaEnv(first.home, base, "user", "add", "gina")).code, 0)
      const token = (await annaEnv(first.home, base, "user", "token", "gina")).stdout.trim()
      const nodes = [first, await startNode("n2"), await startNode("n3")]
      const running = new Set(nodes)
      try {
        // Every shard is held, by all three.
        const joined = await until("three nodes holding every shard", async () => {
          const s = await status(first.home)
          return s.up === 3 && s.shards === SHARDS && s.nodes.every((n) => n.shards > 0) ? s : undefined
        })
        assert.deepStrictEqual(joined.nodes.map((n) => n.node), ["n1", "n2", "n3"])

        const ask = async (node: Node, session: string, content: string, stream: boolean): Promise<string> => {
          const client = new OpenAI({ baseURL: node.url, apiKey: token, maxRetries: 0 })
          if (!stream) {
            const r = await client.chat.completions.create({ model: "default", user: session, messages: [{ role: "user", content }] })
            return r.choices[0]?.message.content ?? ""
          }
          let text = ""
          const s = await client.chat.completions.create({ model: "default", user: session, stream: true, messages: [{ role: "user", content }] })
          for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? ""
          return text
        }

        // 30 sessions × 3 turns, each turn entering another node; the second turn streamed.
        const sessions = Array.from({ length: 30 }, (_, i) => `trip-${i}`)
        const before = fake.requests.length
        await Promise.all(sessions.map(async (session, i) => {
          for (let turn = 0; turn < 3; turn++) {
            const node = nodes[(i + turn) % 3] as Node
            assert.strictEqual(await ask(node, session, `message ${turn + 1} of ${session}`, turn === 1), `reply #${turn + 1}`, `${session} turn ${turn + 1} on ${node.id}`)
          }
        }))
        // Each turn asked the model once.
        assert.strictEqual(fake.requests.length - before, sessions.length * 3)

        // Each session is live on exactly one node, and the sessions are spread over the nodes.
        const owners = await until("every session live on one node", async () => {
          const s = await status(first.home)
          const total = s.nodes.reduce((n, x) => n + x.sessions, 0)
          return total === sessions.length ? s : undefined
        }, 15_000)
        assert.isAtLeast(owners.nodes.filter((n) => n.sessions > 0).length, 2, JSON.stringify(owners))

        // The node with the most sessions dies.
        const victimId = [...owners.nodes].sort((a, b) => b.sessions - a.sessions)[0]?.node
        const victim = nodes.find((n) => n.id === victimId) as Node
        victim.child.kill("SIGKILL")
        await victim.done
        running.delete(victim)
        const survivors = nodes.filter((n) => n !== victim)
        const killedAt = Date.now()
        let slowest = 0
        await Promise.all(sessions.map(async (session, i) => {
          const t0 = Date.now()
          const node = survivors[i % 2] as Node
          assert.strictEqual(await ask(node, session, `message 4 of ${session}`, i % 3 === 0), "reply #4", `${session} after the kill, on ${node.id}`)
          slowest = Math.max(slowest, Date.now() - t0)
        }))
        console.log(`cluster e2e: ${victim.id} (${owners.nodes.find((n) => n.node === victim.id)?.sessions} sessions) killed; every session answered again within ${((Date.now() - killedAt) / 1000).toFixed(1)} s (slowest turn ${(slowest / 1000).toFixed(1)} s)`)
        assert.strictEqual(fake.requests.length - before, sessions.length * 4)
        // The history of each session is whole: the model saw its three earlier turns.
        const lastBody = JSON.stringify(fake.requests.at(-1)?.body ?? "")
        assert.match(lastBody, /message 3 of trip-\d+/)

        // The survivors hold every shard; the dead node is reported down.
        const after = await until("two nodes holding every shard, the dead one down", async () => {
          const s = await status(first === victim ? (survivors[0] as Node).home : first.home)
          return s.up === 2 && s.shards === SHARDS && s.nodes.some((n) => n.node === victim.id && !n.up) ? s : undefined
        })
        assert.strictEqual(after.nodes.length, 3)
        const verify = await annaEnv((survivors[0] as Node).home, { ANNA_DATABASE_URL: database }, "memory", "verify")
        assert.strictEqual(verify.code, 0, verify.stdout + verify.stderr)
      } finally {
        for (const node of running) node.child.kill("SIGTERM")
        for (const node of running) {
          const exit = await node.done
          assert.strictEqual(exit.code, 0, `${node.id}: ${node.out()}`)
          assert.notInclude(node.out(), DB_PASSWORD)
        }
      }
    }, 240_000)
  })
}
