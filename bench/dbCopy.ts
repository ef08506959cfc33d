/**
 * `anna db copy` (issue 26) on a big home: `node bench/dbCopy.ts` (N=100000 messages by default, in 10
 * sessions, each compacted) builds a SQLite home, starts a throwaway PostgreSQL server
 * (test/support/pgServer.ts), runs the built `dist/main.js db copy --to … --json` under
 * `/usr/bin/time -v`, and prints rows/s and the copy process's peak RSS. `NODE_ARGS="…"` passes V8
 * flags to that process (e.g. `--max-old-space-size=48` shows the live heap stays bounded).
 * Run `npm run build` first.
 */
import { Layer, ManagedRuntime } from "effect"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as DeterministicSummarizer from "../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../src/layers/memory/LcmMemory.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import { Compactor } from "../src/services/Compactor.ts"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { startServer } from "../test/support/pgServer.ts"
import { sessionOf } from "./support/common.ts"
import { makeTranscript } from "./support/transcript.ts"

const N = Number(process.env["N"] ?? 100_000)
const SESSIONS = Number(process.env["SESSIONS"] ?? 10)
const MAIN = resolve(import.meta.dirname, "../dist/main.js")

const home = mkdtempSync(join(tmpdir(), "anna-bench-copy-"))
const file = join(home, "anna.db")
const server = await startServer()
try {
  const runtime = ManagedRuntime.make(
    LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer), Layer.provideMerge(Sqlite.layer(file)))
  )
  const t0 = performance.now()
  for (let s = 0; s < SESSIONS; s++) {
    const transcript = makeTranscript({ seed: 100 + s })
    const session = sessionOf(s, 3)
    for (let done = 0; done < N / SESSIONS; done += 1000) {
      await runtime.runPromise(MemoryProvider.use((m) => m.append(session, transcript.take(Math.min(1000, N / SESSIONS - done)))))
    }
    await runtime.runPromise(Compactor.use((c) => c.compact(session.key, { budget: 20_000, full: true })))
  }
  await runtime.dispose()
  console.log(`home: ${N} messages in ${SESSIONS} sessions, built in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${(statSync(file).size / 2 ** 20).toFixed(1)} MiB`)
  const admin = new URL(server.adminUrl)
  const psql = spawnSync(join("/usr/lib/postgresql/15/bin/psql"), ["-h", admin.hostname, "-p", admin.port, "-U", admin.username, "-d", "postgres", "-qc", "CREATE DATABASE copytarget"], { stdio: "inherit" })
  if (psql.status !== 0) throw new Error("could not create the target database")
  const url = server.adminUrl.replace(/\/postgres$/, "/copytarget")
  const nodeArgs = (process.env["NODE_ARGS"] ?? "").split(" ").filter(Boolean)
  const r = spawnSync("/usr/bin/time", ["-v", process.execPath, ...nodeArgs, MAIN, "db", "copy", "--to", url, "--json"], {
    env: { ...process.env, ANNA_HOME: home, ANNA_LOG_LEVEL: "warn" },
    encoding: "utf8",
    maxBuffer: 1 << 26
  })
  if (r.status !== 0) throw new Error(`anna db copy exited ${r.status}:\n${r.stderr}`)
  const summary = JSON.parse(r.stdout) as {
    seconds: number
    rows: number
    verified: boolean
    indexed: number
    phases: { copy: number; index: number; verify: number }
  }
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1]
  console.log(`copy: ${summary.rows} rows in ${summary.seconds.toFixed(1)} s = ${(summary.rows / summary.seconds).toFixed(0)} rows/s ` +
    `(${(N / summary.seconds).toFixed(0)} messages/s), ${summary.indexed} indexed for search, verified ${summary.verified}; ` +
    `peak RSS ${(Number(rss) / 1024).toFixed(0)} MiB; phases (s): copy ${summary.phases.copy}, index ${summary.phases.index}, verify ${summary.phases.verify}`)
} finally {
  server.stop()
  rmSync(home, { recursive: true, force: true })
}
