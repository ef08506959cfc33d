/**
 * Whole-process start-up of the `anna` binary (dist/main.js), as the operator's shell sees it:
 * spawn, wait for exit, against `node -e 0` on the same Node binary (`process.execPath`). Besides
 * help, `agent list` and the memory commands: the listings of issue 14 (`schedule list`, `skill list`,
 * `mcp list` of an agent with no servers), each printing its "none" line on this home, and those of
 * issue 15 (`playbook list`, `diary list`) on an empty home (nothing but the migrated database).
 *
 * - dist/ is rebuilt first (`npm run build --silent`), so the figures are for the code checked out;
 *   a failed build fails the phase.
 * - The databases are real anna databases: `$ANNA_HOME/anna.db` created by the binary itself
 *   (`anna provider add`, which applies the migrations), one provider and the agent `bench` added
 *   through the CLI as an operator would, then 100,000 messages appended through LcmMemory. Two
 *   shapes, each in its own ANNA_HOME:
 *   - 100 sessions × 1,000 messages of 10 users: the search phase's 100k corpus (same seeds and
 *     session keys), so the CLI's search does the work measured in-process there. Many mid-sized
 *     sessions is the gateway's shape, and it makes `memory search --session` a real scope (1 % of
 *     the rows). `memory stats` of one of these sessions costs under a millisecond, so that row is
 *     start-up alone.
 *   - 1 session of 100,000 messages: `memory stats` reads every row of the session (counts and
 *     token sums), so this is its worst case on a 100k-message database.
 * - Each command gets its own Node compile cache (`NODE_COMPILE_CACHE`, a folder under `dir`):
 *   its first run is with an empty cache (reported apart), then warm-up runs, then the measured
 *   runs, all with a warm cache. The OS page cache is warm throughout (the files were just built).
 * - Measured runs go round-robin over the commands, so load from elsewhere on the machine spreads
 *   over all of them instead of skewing one.
 * - Every run must exit 0 and print what the command should (the message count, hits in the
 *   session asked for, the same help bytes as dist/help.txt); otherwise the phase fails.
 * - The targets of the issue are printed as "target met" / "target missed" lines, not asserted.
 */
import { type SpawnSyncReturns, execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { Searcher } from "../src/services/Searcher.ts"
import { dbBytes, sessionOf } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { int, mib, ms, print, progress, ratio, sampleEffect, seconds, section, type Summary, summarize, table } from "./support/measure.ts"
import { makeTranscript } from "./support/transcript.ts"

export const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))
const MAIN = join(ROOT, "dist", "main.js")
const HELP = join(ROOT, "dist", "help.txt")

const MANY = { sessions: 100, perSession: 1_000, users: 10 } as const
const ONE = { sessions: 1, perSession: 100_000, users: 1 } as const
const WORD = "docker"
const HELP_TARGET = 2
const MEMORY_TARGET_MS = 400

/** Rebuilds dist/ (tsc + bundle + help text); a failed build ends the phase with its output. */
export const buildDist = (): void => {
  progress("startup: npm run build --silent (dist/main.js must match the code measured)")
  const t0 = performance.now()
  const r = spawnSync("npm", ["run", "build", "--silent"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  if (r.status !== 0 || !existsSync(MAIN) || !existsSync(HELP)) {
    const output = `${r.stdout ?? ""}${r.stderr ?? ""}`.trim().split("\n").slice(-30).join("\n")
    throw new Error(
      `startup: \`npm run build\` failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}), so dist/main.js is missing or stale; ` +
        `fix the build and run again.\n${output}`
    )
  }
  progress(`startup: built in ${seconds(performance.now() - t0)}`)
}

interface Spec {
  readonly label: string
  /** The ANNA_HOME it runs against. */
  readonly home: string
  readonly args: ReadonlyArray<string>
  /** Why the output is wrong, or undefined when it is what the command should print. */
  readonly check: (stdout: string) => string | undefined
  /** The same work in-process (engine already open), for the start-up share of a memory command. */
  readonly inProcess?: Summary
  readonly memoryTarget?: boolean
}

interface Measured {
  readonly spec: Spec
  readonly cold: number
  readonly warm: Summary
  readonly min: number
}

/** The environment every run gets: the bench's home and compile cache, nothing that changes Node's start. */
const envFor = (home: string, cache: string): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, ANNA_HOME: home, NODE_COMPILE_CACHE: cache, ANNA_LOG_LEVEL: "info" }
  for (const k of ["NODE_OPTIONS", "NODE_DISABLE_COMPILE_CACHE", "NO_COLOR", "FORCE_COLOR"]) delete env[k]
  // Provider keys in the bench's environment must not become provider rows or change the summarizer.
  for (const k of Object.keys(env)) if (/^(ANTHROPIC|OPENAI)_/.test(k)) delete env[k]
  return env
}

/** One whole process: spawn, wait for exit; fails the phase unless it exits 0 with sane output. */
const runOnce = (spec: Spec, env: NodeJS.ProcessEnv): number => {
  const t0 = performance.now()
  const r: SpawnSyncReturns<string> = spawnSync(process.execPath, spec.args, {
    cwd: ROOT,
    env,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 64 * 1024 * 1024
  })
  const dt = performance.now() - t0
  const shown = `node ${spec.args.join(" ")}`
  if (r.error !== undefined) throw new Error(`startup: ${shown} could not run: ${r.error.message}`)
  if (r.status !== 0) {
    throw new Error(`startup: ${shown} exited ${r.status ?? r.signal}\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 2000)}`)
  }
  const wrong = spec.check(r.stdout)
  if (wrong !== undefined) throw new Error(`startup: ${shown} printed the wrong thing: ${wrong}\nstdout: ${r.stdout.slice(0, 2000)}`)
  return dt
}

const folderBytes = (p: string): number =>
  statSync(p).isDirectory() ? readdirSync(p).reduce((n, f) => n + folderBytes(join(p, f)), 0) : statSync(p).size

const size = (bytes: number): string => (bytes < 1048576 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / 1048576).toFixed(1)} MiB`)

/** Runs the CLI for setup (untimed), e.g. `provider add`. */
const cli = (env: NodeJS.ProcessEnv, ...args: Array<string>): string =>
  execFileSync(process.execPath, [MAIN, ...args], { cwd: ROOT, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

interface Corpus {
  readonly sessions: number
  readonly perSession: number
  readonly users: number
}

interface Home {
  readonly home: string
  readonly file: string
  readonly bytes: number
  readonly buildMs: number
}

const SAMPLES = { warmup: 2, min: 10, max: 100, budgetMs: 1_000 }

/**
 * A real $ANNA_HOME under `dir`: the binary creates and migrates anna.db and adds one provider and
 * the agent `bench`; then the corpus is appended through LcmMemory, 1,000 messages per call.
 */
const makeHome = async (dir: string, name: string, corpus: Corpus): Promise<Home> => {
  const home = join(dir, name)
  const setup = envFor(home, join(dir, "startup-cache-setup"))
  cli(setup, "provider", "add", "local", "--type", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-bench", "--model", "fake-large")
  cli(setup, "agent", "set", "bench", "--model", "local/fake-large")
  const file = join(home, "anna.db")
  progress(`startup: appending ${corpus.sessions} × ${int(corpus.perSession)} messages to ${file}`)
  const t0 = performance.now()
  const engine = openEngine(file)
  for (let s = 0; s < corpus.sessions; s++) {
    const session = sessionOf(s, corpus.users)
    // The search phase's seeds for its sessions; one long transcript for a single session.
    const transcript = makeTranscript({ seed: 10_000 + s })
    for (let done = 0; done < corpus.perSession; done += 1_000) {
      const messages = transcript.take(Math.min(1_000, corpus.perSession - done))
      await engine.runPromise(MemoryProvider.use((m) => m.append(session, messages)))
    }
  }
  const buildMs = performance.now() - t0
  await engine.dispose()
  return { home, file, bytes: dbBytes(file), buildMs }
}

/**
 * A home with nothing in it but the migrated database: one untimed `anna agent list` creates it, so
 * the measured runs (the first one included) do not pay for the migrations.
 */
const emptyHome = (dir: string): string => {
  const home = join(dir, "startup-home-empty")
  cli(envFor(home, join(dir, "startup-cache-setup")), "agent", "list")
  return home
}

/** Runs `f` on an engine over `file`, then closes it (so the CLI later opens the file alone). */
const onEngine = async <A, E>(
  file: string,
  f: (memory: MemoryProvider["Service"], searcher: Searcher["Service"]) => Effect.Effect<A, E>
): Promise<A> => {
  const engine = openEngine(file)
  try {
    return await engine.runPromise(Effect.gen(function*() {
      return yield* f(yield* MemoryProvider, yield* Searcher)
    }))
  } finally {
    await engine.dispose()
  }
}

const describe = (corpus: Corpus, home: Home): string =>
  `${int(corpus.sessions * corpus.perSession)} messages as ${corpus.sessions === 1 ? "one session" : `${corpus.sessions} sessions`} × ${int(corpus.perSession)}` +
  (corpus.users > 1 ? ` of ${corpus.users} users` : "") + `, ${mib(home.bytes)}, appended in ${seconds(home.buildMs)}`

/** `memory stats` printed the session's message count. */
const statsCheck = (messages: number) => (out: string): string | undefined =>
  new RegExp(`messages\\s+${messages} \\(`).test(out) ? undefined : `expected ${messages} messages`

export const runStartup = async (dir: string): Promise<void> => {
  buildDist()
  const quick = process.env["BENCH_QUICK"] === "1"
  const warmups = quick ? 1 : 3
  const runs = quick ? 5 : 15

  const many = await makeHome(dir, "startup-home", MANY)
  const empty = emptyHome(dir)
  const one = await makeHome(dir, "startup-home-one-session", ONE)
  const key = sessionOf(Math.floor(MANY.sessions / 2), MANY.users).key
  const bigKey = sessionOf(0, ONE.users).key

  // The same operations in-process, so the table can show what start-up adds to them.
  progress("startup: the memory operations in-process")
  const inProcess = await onEngine(many.file, (memory, searcher) =>
    Effect.gen(function*() {
      const stats = yield* memory.stats(key)
      return {
        messages: stats.messages,
        stats: yield* sampleEffect(SAMPLES, () => memory.stats(key)),
        all: yield* sampleEffect(SAMPLES, () => searcher.search(WORD, { scope: { _tag: "All" } })),
        session: yield* sampleEffect(SAMPLES, () => searcher.search(WORD, { scope: { _tag: "Session", sessionKey: key } }))
      }
    }))
  const inProcessBig = await onEngine(one.file, (memory) =>
    Effect.gen(function*() {
      const stats = yield* memory.stats(bigKey)
      return { messages: stats.messages, stats: yield* sampleEffect(SAMPLES, () => memory.stats(bigKey)) }
    }))

  const help = readFileSync(HELP, "utf8")
  /** Hit rows of the search table (a header line, then one line per hit). */
  const hitRows = (out: string) => out.trimEnd().split("\n").slice(1)
  const specs: ReadonlyArray<Spec> = [
    { label: "node -e 0", home: many.home, args: ["-e", "0"], check: (out) => (out === "" ? undefined : "expected no output") },
    { label: "anna --help (pre-rendered)", home: many.home, args: [MAIN, "--help"], check: (out) => (out === help ? undefined : "not dist/help.txt") },
    { label: "anna -h (rendered live)", home: many.home, args: [MAIN, "-h"], check: (out) => (out === help ? undefined : "not the bytes of dist/help.txt") },
    {
      label: "anna agent list",
      home: many.home,
      args: [MAIN, "agent", "list"],
      check: (out) => (/^bench\s+local\/fake-large/m.test(out) ? undefined : "agent bench is not listed")
    },
    {
      label: "anna schedule list (no jobs)",
      home: many.home,
      args: [MAIN, "schedule", "list"],
      check: (out) => (out.startsWith("No scheduled jobs") ? undefined : "expected no jobs")
    },
    {
      label: "anna skill list (none installed)",
      home: many.home,
      args: [MAIN, "skill", "list"],
      check: (out) => (out.startsWith("No skills installed") ? undefined : "expected no skills")
    },
    {
      label: "anna playbook list (empty home)",
      home: empty,
      args: [MAIN, "playbook", "list"],
      check: (out) => (out.startsWith("No rules in the global playbook") ? undefined : "expected no rules")
    },
    {
      label: "anna diary list (empty home)",
      home: empty,
      args: [MAIN, "diary", "list"],
      check: (out) => (out.startsWith("No diary entries") ? undefined : "expected no entries")
    },
    {
      label: "anna mcp list --agent bench (no servers)",
      home: many.home,
      args: [MAIN, "mcp", "list", "--agent", "bench"],
      check: (out) => (out.startsWith("Agent bench has no MCP servers") ? undefined : "expected no servers")
    },
    {
      label: "anna memory stats KEY",
      home: many.home,
      args: [MAIN, "memory", "stats", key],
      check: statsCheck(inProcess.messages),
      inProcess: inProcess.stats,
      memoryTarget: true
    },
    {
      label: "anna memory stats KEY (one 100k-message session)",
      home: one.home,
      args: [MAIN, "memory", "stats", bigKey],
      check: statsCheck(inProcessBig.messages),
      inProcess: inProcessBig.stats,
      memoryTarget: true
    },
    {
      label: `anna memory search ${WORD}`,
      home: many.home,
      args: [MAIN, "memory", "search", WORD],
      check: (out) => (hitRows(out).length === 10 ? undefined : "expected 10 hits"),
      inProcess: inProcess.all,
      memoryTarget: true
    },
    {
      label: `anna memory search ${WORD} --session KEY`,
      home: many.home,
      args: [MAIN, "memory", "search", WORD, "--session", key],
      check: (out) => {
        const rows = hitRows(out)
        return rows.length === 10 && rows.every((r) => r.includes(key)) ? undefined : `expected 10 hits, all in ${key}`
      },
      inProcess: inProcess.session,
      memoryTarget: true
    }
  ]

  // Per command: one run on an empty compile cache, warm-ups, then measured runs round-robin.
  const cacheRoot = join(dir, "startup-cache")
  const envs = specs.map((spec, i) => {
    const cache = join(cacheRoot, String(i))
    mkdirSync(cache, { recursive: true })
    return envFor(spec.home, cache)
  })
  const loadBefore = loadavg()[0] ?? Number.NaN
  progress(`startup: first runs (empty compile cache), then ${warmups} warm-up and ${runs} measured rounds of ${specs.length} commands`)
  const cold = specs.map((spec, i) => runOnce(spec, envs[i] ?? {}))
  for (let w = 0; w < warmups; w++) for (const [i, spec] of specs.entries()) runOnce(spec, envs[i] ?? {})
  const times: Array<Array<number>> = specs.map(() => [])
  for (let r = 0; r < runs; r++) for (const [i, spec] of specs.entries()) times[i]?.push(runOnce(spec, envs[i] ?? {}))
  const loadAfter = loadavg()[0] ?? Number.NaN
  const measured: Array<Measured> = specs.map((spec, i) => ({
    spec,
    cold: cold[i] ?? Number.NaN,
    warm: summarize(times[i] ?? []),
    min: Math.min(...(times[i] ?? []))
  }))

  const node = measured[0]?.warm.p50 ?? Number.NaN
  section(
    `CLI start-up, whole process (${int(MANY.sessions * MANY.perSession)}-message databases)`,
    table(
      ["command", "first run, empty compile cache (ms)", "warm cache p50 / p95 / min (ms)", "p50 / node -e 0", "in-process work p50 (ms)", "compile cache"],
      measured.map((m, i) => [
        m.spec.label,
        ms(m.cold),
        `${ms(m.warm.p50)} / ${ms(m.warm.p95)} / ${ms(m.min)}`,
        ratio(m.warm.p50, node),
        m.spec.inProcess === undefined ? "–" : ms(m.spec.inProcess.p50),
        i === 0 ? "–" : size(folderBytes(join(cacheRoot, String(i))))
      ])
    ),
    `${runs} measured runs per command (${warmups} warm-up), round-robin, after one run each on an empty compile cache.\n` +
      `Every process is \`${process.execPath} …\` with NODE_COMPILE_CACHE set to a folder of its own (the last\n` +
      "column is its size after the runs) and stdout/stderr piped (so plain help text, no colors). \"In-process work\" is\n" +
      "the same call on an open engine (LcmMemory on the same file): whole process − in-process ≈ what starting costs.\n" +
      `Databases: ${describe(MANY, many)} (KEY = ${key}, ${int(inProcess.messages)} messages);\n` +
      `${describe(ONE, one)} (KEY = ${bigKey}). Each has one provider and the agent bench, added through the CLI;\n` +
      "\"(empty home)\" rows run on a home holding only the database its first `anna agent list` created and migrated (untimed);\n" +
      `"${WORD}" is in about 28 % of the messages. Load average (1 min): ${loadBefore.toFixed(2)} as the runs began (it still\n` +
      `counts the build and the fill above), ${loadAfter.toFixed(2)} as they ended; the runs keep about 1 of the ${cpus().length} cores busy,\n` +
      "so more than that is other work on the machine."
  )

  print()
  const helpRow = measured[1]
  const helpRatio = (helpRow?.warm.p50 ?? Number.NaN) / node
  print(
    `- \`anna --help\` p50 ${ms(helpRow?.warm.p50 ?? Number.NaN)} ms = ${helpRatio.toFixed(2)}× node -e 0 (${ms(node)} ms), ` +
      `target ≤ ${HELP_TARGET}×: ${helpRatio <= HELP_TARGET ? "target met" : "target missed"}`
  )
  for (const m of measured.filter((m) => m.spec.memoryTarget === true)) {
    print(
      `- \`${m.spec.label}\` p50 ${ms(m.warm.p50)} ms, target ≤ ${MEMORY_TARGET_MS} ms: ` +
        `${m.warm.p50 <= MEMORY_TARGET_MS ? "target met" : "target missed"}` +
        (m.cold > MEMORY_TARGET_MS ? ` (first run on an empty compile cache: ${ms(m.cold)} ms)` : "")
    )
  }
}
