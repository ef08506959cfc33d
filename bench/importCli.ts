/**
 * `anna memory import` as an operator runs it: whole processes of dist/main.js (rebuilt first)
 * importing 100,000 messages of the bench transcript (bench/support/transcript.ts: 476 bytes per
 * message on average, about 7 % Chinese, tool calls and results) written as JSONL, into a fresh
 * ANNA_HOME each time. Reports the time the command prints, messages per second and the process's
 * peak RSS (`process.resourceUsage().maxRSS`, written by a preloaded module when it exits). The
 * floor: the same lines parsed and inserted with raw SQL (message row + FTS5 rows, one transaction,
 * bench/support/floor.ts) in this process.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { NewMessage } from "../src/domain/message.ts"
import { buildDist } from "./startup.ts"
import { openFloor } from "./support/floor.ts"
import { int, mib, progress, rate, section, seconds, table } from "./support/measure.ts"
import { makeTranscript } from "./support/transcript.ts"

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))
const MAIN = join(ROOT, "dist", "main.js")
const MESSAGES = 100_000
const RUNS = 3
/** The import's target (issue 11). */
const RATE_TARGET = 50_000
const RSS_TARGET_MIB = 200

interface Run {
  readonly millis: number
  readonly maxRss: number
}

const importOnce = (dir: string, file: string, preload: string, i: number): Run => {
  const home = mkdtempSync(join(dir, `import-${i}-`))
  const rssFile = join(home, "maxrss")
  const r = spawnSync(process.execPath, ["--import", preload, MAIN, "memory", "import", "a:cli:bench:main", file, "--json"], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, ANNA_HOME: home, ANNA_BENCH_MAXRSS: rssFile },
    stdio: ["ignore", "pipe", "pipe"]
  })
  if (r.status !== 0) throw new Error(`import: anna memory import exited ${r.status ?? r.signal}: ${r.stderr}`)
  const report = JSON.parse(r.stdout) as { imported: number; millis: number }
  if (report.imported !== MESSAGES) throw new Error(`import: ${report.imported} messages imported, not ${MESSAGES}`)
  return { millis: report.millis, maxRss: Number(readFileSync(rssFile, "utf8")) * 1024 }
}

export const runImport = async (dir: string): Promise<void> => {
  buildDist()
  progress(`import: writing ${int(MESSAGES)} transcript messages as JSONL`)
  const messages: ReadonlyArray<NewMessage> = makeTranscript({ seed: 7 }).take(MESSAGES)
  const file = join(dir, "import.jsonl")
  writeFileSync(
    file,
    `${messages.map((m) => JSON.stringify({ role: m.role, content: m.content, ts: new Date(m.createdAt ?? 0).toISOString() })).join("\n")}\n`
  )
  const bytes = readFileSync(file).length
  const preload = join(dir, "maxrss.mjs")
  writeFileSync(
    preload,
    "import { writeFileSync } from 'node:fs'\n" +
      "process.on('exit', () => { const f = process.env.ANNA_BENCH_MAXRSS; if (f) writeFileSync(f, String(process.resourceUsage().maxRSS)) })\n"
  )

  const runs: Array<Run> = []
  for (let i = 0; i < RUNS; i++) {
    progress(`import: anna memory import, run ${i + 1} of ${RUNS}`)
    runs.push(importOnce(dir, file, preload, i))
  }

  progress("import: floor")
  const floor = openFloor(join(dir, "import-floor.db"))
  const t0 = performance.now()
  const parsed: Array<NewMessage> = []
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue
    const m = JSON.parse(line) as { role: NewMessage["role"]; content: NewMessage["content"]; ts: string }
    parsed.push({ role: m.role, content: m.content, createdAt: Date.parse(m.ts) })
  }
  floor.appendBatch(1, parsed)
  const floorMs = performance.now() - t0

  const best = Math.min(...runs.map((r) => r.millis))
  const peak = Math.max(...runs.map((r) => r.maxRss))
  const rows = runs.map((r, i) => [
    `anna memory import, run ${i + 1}`,
    seconds(r.millis),
    `${rate(MESSAGES / (r.millis / 1000))} msg/s`,
    mib(r.maxRss)
  ])
  rows.push(["floor: parse + raw INSERT + FTS5, one transaction", seconds(floorMs), `${rate(MESSAGES / (floorMs / 1000))} msg/s`, "–"])
  section(
    `Import of ${int(MESSAGES)} transcript messages (${mib(bytes)} of JSONL), whole process`,
    table(["run", "time", "rate", "peak RSS"], rows),
    `Best ${rate(MESSAGES / (best / 1000))} msg/s (target ${int(RATE_TARGET)}: ${
      MESSAGES / (best / 1000) >= RATE_TARGET ? "met" : "missed"
    }); highest peak RSS ${mib(peak)} (target ${RSS_TARGET_MIB} MiB: ${peak <= RSS_TARGET_MIB * 1048576 ? "met" : "missed"}). ` +
      "Time is what the command reports (both passes: the whole file checked, then stored in one transaction); " +
      "the floor only parses and inserts, in this process."
  )
  floor.close()
}
