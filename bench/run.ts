/**
 * `npm run bench`: the memory engine's benchmarks, each against the same operation written as the
 * simplest raw SQL (the floor). Prints Markdown tables; nothing is asserted. Real SQLite files in
 * a temporary folder, removed at the end.
 *
 * startup times whole `anna` processes (dist/main.js, rebuilt first: `--help`, `-h`, `agent list`,
 * `schedule list`, `skill list`, `mcp list`, `memory stats` and `memory search` on a 100k-message
 * database) against `node -e 0`.
 *
 * retrieval evaluates search quality rather than speed: paraphrased questions about facts planted in
 * generated multi-session chat, recall@5/10/20 and MRR of the strict and ranked modes (bench/retrieval.ts).
 *
 * BENCH_QUICK=1 skips the 1M-message search case and runs each start-up command fewer times.
 * import times whole `anna memory import` processes of 100k transcript messages (dist/main.js, rebuilt
 * first): rate and peak RSS, against a raw-SQL floor.
 *
 * otlp times turns with the OTLP export on (traces at 100 %, metrics, logs, to a local collector) against none (issue 27).
 * channels runs the Telegram channel end to end (fake Bot API, instant model) against the runtime alone.
 * admin times the admin API (issue 13) on 1,000 sessions / ~200k messages / 20k model calls against
 * raw SQL on the same file, and sizes the web console's first load (dist/web, rebuilt first).
 * reach times the agent's reach (issue 14) with real parts: a webfetch tool call on a local 100 KB / 1 MB page
 * against a raw GET and the render step alone; `anna mcp serve` (cold start, search over a user with 20k
 * messages) against a minimal SDK server and the Searcher in-process; anna's mcp tool calling server-everything
 * against the SDK Client; ToolCatalog.version per turn against `SELECT 1` (bench/reach.ts).
 * learning times the self-improving memory (issue 15) with real parts: Learning.beforeTurn per turn (2 × 200
 * playbook rules, 1,000 diary entries) against `SELECT 1` and the pure selection, with the plugin off too;
 * selectRules over 100 / 1,000 rules; parse, stringify and feedback of a 1,000-rule playbook file against a
 * plain write + fsync + rename; the reflection heuristic and settling uses; Thompson ranking (bench/learning.ts).
 * search-size (part of search) times a rare marker in one session of 1k / 10k / 100k messages (issue 25).
 * entries compares what importing `anna/layers` and `anna/memory` loads (modules, RSS; issue 25; bench/entries.ts).
 * postgres (issue 26) runs the memory engine's hot paths on SQLite and on a throwaway local PostgreSQL side by side
 * (bench/postgres.ts; not in the default set: it needs Debian's postgresql).
 * cluster (issue 28) runs 1, 2 and 3 gateway processes on one throwaway PostgreSQL: turns per second, p50/p95,
 * CPU and peak RSS per node (bench/cluster.ts; not in the default set either).
 * BENCH_ONLY=search-size,postgres,cluster,append,import,assemble,search,retrieval,runtime,otlp,channels,admin,sandbox,startup,entries,reach,learning limits phases.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, release, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { runAdmin } from "./admin.ts"
import { runAppend } from "./append.ts"
import { runAssemble } from "./assemble.ts"
import { runPostgres } from "./postgres.ts"
import { runChannels } from "./channels.ts"
import { runCluster } from "./cluster.ts"
import { runEntries } from "./entries.ts"
import { runImport } from "./importCli.ts"
import { runLearning } from "./learning.ts"
import { runReach } from "./reach.ts"
import { runRetrieval } from "./retrieval.ts"
import { runOtlp } from "./otlp.ts"
import { runRuntime } from "./runtime.ts"
import { runSandboxOutput } from "./sandboxOutput.ts"
import { runSearch, runSessionSize } from "./search.ts"
import { runStartup } from "./startup.ts"
import { ratios } from "./support/common.ts"
import { int, markRss, mib, print, rssMarks, seconds, section, table } from "./support/measure.ts"

const quick = process.env["BENCH_QUICK"] === "1"
const only = new Set((process.env["BENCH_ONLY"] ?? "append,import,assemble,search,retrieval,runtime,otlp,channels,admin,sandbox,startup,entries,reach,learning").split(",").map((s) => s.trim()))

const sqliteVersion = (): string => {
  const db = new DatabaseSync(":memory:")
  const row = db.prepare("SELECT sqlite_version() AS v").get()
  db.close()
  return String(row?.["v"] ?? "?")
}

/** The commit measured, and whether src/ or migrations/ had uncommitted changes (read-only git calls). */
const revision = (): string => {
  try {
    const git = (...args: Array<string>) => execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    const dirty = git("status", "--porcelain", "--", "src", "migrations").length > 0
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? " + uncommitted changes in src/ or migrations/" : ""}`
  } catch {
    return "unknown (no git)"
  }
}

const main = async () => {
  const started = performance.now()
  const dir = mkdtempSync(join(tmpdir(), "anna-bench-"))
  const cpu = cpus()
  print("## anna memory benchmarks")
  print()
  print(`- date: ${new Date().toISOString()}`)
  print(
    `- machine: ${cpu.length} × ${cpu[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${process.platform} ${release()}`
  )
  print(`- Node ${process.version}, SQLite ${sqliteVersion()}; mode: ${quick ? "quick (no 1M search)" : "full"}`)
  print(`- code: ${revision()}`)
  markRss("start")
  try {
    if (only.has("append")) {
      await runAppend(dir)
      markRss("after append")
    }
    if (only.has("assemble")) {
      await runAssemble(dir)
      markRss("after assemble + compaction")
    }
    if (only.has("search") || only.has("search-size")) {
      await runSessionSize(dir)
      markRss("after search by session size")
    }
    if (only.has("search")) {
      await runSearch(dir, { sessions: 100, perSession: 1_000, users: 10 })
      markRss("after search 100k")
      if (!quick) {
        await runSearch(dir, { sessions: 1_000, perSession: 1_000, users: 100 })
        markRss("after search 1M")
      }
    }
    if (only.has("postgres")) {
      await runPostgres(dir)
      markRss("after postgres")
    }
    if (only.has("cluster")) {
      await runCluster()
      markRss("after cluster")
    }
    if (only.has("import")) {
      await runImport(dir)
      markRss("after import")
    }
    if (only.has("retrieval")) {
      await runRetrieval(dir)
      markRss("after retrieval")
    }
    if (only.has("runtime")) {
      await runRuntime(dir)
      markRss("after runtime")
    }
    if (only.has("otlp")) {
      await runOtlp(dir)
      markRss("after otlp")
    }
    if (only.has("channels")) {
      await runChannels(dir)
      markRss("after channels")
    }
    if (only.has("admin")) {
      await runAdmin()
      markRss("after admin")
    }
    if (only.has("sandbox")) {
      await runSandboxOutput()
      markRss("after sandbox output")
    }
    if (only.has("startup")) {
      await runStartup(dir)
      markRss("after startup")
    }
    if (only.has("entries")) {
      // dist/ is rebuilt by the startup phase when it ran.
      runEntries(dir, { build: !only.has("startup") })
      markRss("after entries")
    }
    if (only.has("reach")) {
      // dist/ is rebuilt by the startup phase when it ran.
      await runReach(dir, { build: !only.has("startup") })
      markRss("after reach")
    }
    if (only.has("learning")) {
      await runLearning(dir)
      markRss("after learning")
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }

  if (ratios.length > 0) {
    section("Ratios to the floor", table(["operation", "ours", "floor", "ours / floor"], ratios.map((r) => [
      r.operation,
      r.ours,
      r.floor,
      r.ratio
    ])))
  }
  section(
    "Memory",
    table(["phase", "RSS", "JS heap used", "external + array buffers"], [
      ...rssMarks.map((m) => [m.phase, mib(m.rss), mib(m.heapUsed), mib(m.external)]),
      [
        "peak (resourceUsage().maxRSS)",
        `${mib(process.resourceUsage().maxRSS * 1024)} (${int(process.resourceUsage().maxRSS)} KiB)`,
        "–",
        "–"
      ]
    ])
  )
  print(`\nTotal run time: ${seconds(performance.now() - started)}`)
}

await main()
