/**
 * Gateways as a cluster (issue 28): 1, 2 and 3 `anna gateway` processes (dist/main.js, rebuilt
 * first) on one throwaway PostgreSQL (Debian's postgresql), joined by ANNA_RUNNER_ADDRESS, with an
 * instant model (the fake LLM on 127.0.0.1, in this process). SESSIONS sessions × TURNS turns over
 * HTTP, PARALLEL sessions at a time, each turn entering the next node in turn (so with 2 or 3 nodes
 * most turns are sent on to the session's owner). Printed: turns per second, p50/p95 turn latency
 * as the client sees it, and per node the CPU time used during the load and the peak RSS.
 *
 * On one 2-core machine the nodes share the cores with each other, PostgreSQL and the client: the
 * figures show what a cluster costs (the hop to the owner, the cluster's own work), not how it
 * scales on machines of their own. Not in the default set (it needs PostgreSQL): BENCH_ONLY=cluster.
 */
import type { ChildProcess } from "node:child_process"
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { finish, newHome, startEntry, waitForOutput } from "../test/support/spawnAnna.ts"
import { startFakeLlm } from "../test/support/fakeLlm/server.ts"
import { postgresMissing, startServer } from "../test/support/pgServer.ts"
import { freePort } from "../test/support/ports.ts"
import { buildDist } from "./startup.ts"
import { int, mib, ms, progress, section, summarize, table } from "./support/measure.ts"

const SESSIONS = Number(process.env["BENCH_CLUSTER_SESSIONS"] ?? 100)
const TURNS = Number(process.env["BENCH_CLUSTER_TURNS"] ?? 10)
const PARALLEL = Number(process.env["BENCH_CLUSTER_PARALLEL"] ?? 20)
/** The users the sessions belong to (each user's sessions run on one node: the one that owns their workspace). */
const USERS = 20
const MAIN = new URL("../dist/main.js", import.meta.url).pathname

/** CPU seconds a process has used (user + system), from /proc. */
const cpuSeconds = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? []
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** A process's peak resident memory in bytes (VmHWM). */
const peakRss = (pid: number): number => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return Number(m?.[1] ?? 0) * 1024
}

const psql = (url: string, statement: string) => execFileSync("psql", ["-X", "-q", "-A", "-t", "-d", url, "-c", statement], { encoding: "utf8" })

interface Gateway {
  readonly child: ChildProcess
  readonly url: string
  readonly done: Promise<unknown>
}

const startGateway = async (env: Record<string, string>, id: string | undefined): Promise<Gateway> => {
  const home = newHome()
  const child = startEntry(MAIN, home, ["gateway", "--port", "0"], "info", {
    ...env,
    ...(id === undefined ? {} : { ANNA_RUNNER_ADDRESS: `127.0.0.1:${await freePort()}`, ANNA_NODE_ID: id, ANNA_CLUSTER_LEASE_SECONDS: "5" })
  })
  let out = ""
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()))
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()))
  const done = finish(child)
  const exited = done.then((r) => {
    throw new Error(`the gateway exited (${r.code ?? r.signal}) before it was up:\n${out}`)
  })
  await Promise.race([waitForOutput(child, "press Ctrl+C"), exited])
  const url = /HTTP channel \(OpenAI-compatible\) on (\S+);/.exec(out)?.[1]
  if (url === undefined) throw new Error(`no HTTP address in:\n${out}`)
  return { child, url, done }
}

/** An `anna` command (not synchronous: the fake model in this process must answer it). */
const cli = async (env: Record<string, string>, ...args: Array<string>): Promise<string> => {
  const r = await finish(startEntry(MAIN, newHome(), args, "warn", env))
  if (r.code !== 0) throw new Error(`anna ${args.join(" ")} exited ${r.code}: ${r.stderr}`)
  return r.stdout
}

export const runCluster = async (): Promise<void> => {
  const missing = postgresMissing()
  if (missing !== undefined) {
    section("Cluster: 1, 2 and 3 gateways on one PostgreSQL (issue 28)", `skipped: ${missing}`)
    return
  }
  buildDist()
  const server = await startServer()
  const fake = await startFakeLlm()
  fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "ok" }] }))
  const rows: Array<Array<string>> = []
  try {
    // 0: one gateway without ANNA_RUNNER_ADDRESS (no cluster), the floor.
    for (const variant of [0, 1, 2, 3]) {
      const nodes = Math.max(1, variant)
      const name = `anna_bench_cluster_${variant}_${Date.now().toString(36)}`
      psql(server.adminUrl, `CREATE DATABASE ${name}`)
      const url = new URL(server.adminUrl)
      url.pathname = `/${name}`
      const env = {
        ANNA_DATABASE_URL: url.toString(),
        OPENAI_BASE_URL: fake.openAiUrl,
        OPENAI_API_KEY: "sk-bench"
      }
      await cli(env, "onboard", "--from-env")
      await cli(env, "agent", "set", "default", "--tools", "memory")
      // Sessions of USERS users: a session is owned by its workspace's node (the agent's user's), so
      // the load spreads over the nodes by user.
      const tokens = await Promise.all(Array.from({ length: USERS }, async (_, u) => {
        await cli(env, "user", "add", `bench${u}`)
        return (await cli(env, "user", "token", `bench${u}`)).trim()
      }))
      progress(`cluster: starting ${variant === 0 ? "one gateway without a cluster" : `${nodes} gateway(s)`}`)
      const gateways: Array<Gateway> = []
      for (let i = 1; i <= nodes; i++) gateways.push(await startGateway(env, variant === 0 ? undefined : `b${i}`))
      // Every node holds shards before the load starts.
      for (let tries = 0; variant > 0 && tries < 200; tries++) {
        const held = psql(url.toString(), "SELECT count(*) FROM cluster_nodes WHERE shards > 0").trim()
        if (Number(held) === nodes) break
        await new Promise((r) => setTimeout(r, 100))
      }
      const turn = async (session: number, n: number) => {
        const gateway = gateways[(session + n) % nodes] as Gateway
        const t0 = performance.now()
        const r = await fetch(`${gateway.url}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${tokens[session % USERS]}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "default", user: `s${session}`, messages: [{ role: "user", content: `turn ${n} of session ${session}` }] })
        })
        if (r.status !== 200) throw new Error(`turn answered ${r.status}: ${await r.text()}`)
        await r.arrayBuffer()
        return performance.now() - t0
      }
      // One warm-up turn per session (runners, entities, prepared statements), not counted; PARALLEL at
      // a time (the HTTP channel takes 64 connections per client address).
      let warm = 0
      await Promise.all(Array.from({ length: PARALLEL }, async () => {
        while (warm < SESSIONS) await turn(warm++, 0)
      }))
      const cpuBefore = gateways.map((g) => cpuSeconds(g.child.pid ?? 0))
      const latencies: Array<number> = []
      const started = performance.now()
      let next = 0
      await Promise.all(Array.from({ length: PARALLEL }, async () => {
        while (next < SESSIONS) {
          const session = next++
          for (let n = 1; n <= TURNS; n++) latencies.push(await turn(session, n))
        }
      }))
      const elapsed = (performance.now() - started) / 1000
      const cpu = gateways.map((g, i) => cpuSeconds(g.child.pid ?? 0) - (cpuBefore[i] ?? 0))
      const rss = gateways.map((g) => peakRss(g.child.pid ?? 0))
      const s = summarize(latencies)
      rows.push([
        variant === 0 ? "1, no cluster" : String(nodes),
        int(latencies.length),
        (latencies.length / elapsed).toFixed(0),
        ms(s.p50),
        ms(s.p95),
        cpu.map((c) => `${c.toFixed(1)} s`).join(" / "),
        `${((cpu.reduce((a, b) => a + b, 0) / latencies.length) * 1000).toFixed(2)} ms`,
        rss.map(mib).join(" / ")
      ])
      for (const g of gateways) g.child.kill("SIGTERM")
      await Promise.all(gateways.map((g) => g.done))
      psql(server.adminUrl, `DROP DATABASE ${name} WITH (FORCE)`)
    }
  } finally {
    await fake.close()
    server.stop()
  }
  section(
    "Cluster: 1, 2 and 3 gateways on one PostgreSQL (issue 28)",
    table(["nodes", "turns", "turns/s", "p50", "p95", "CPU per node", "CPU per turn (all nodes)", "peak RSS per node"], rows),
    `${SESSIONS} sessions × ${TURNS} turns over HTTP, ${PARALLEL} sessions at a time, each turn entering the next node in turn; instant model; every node, PostgreSQL and the client on this one machine.`
  )
}
