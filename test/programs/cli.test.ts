/**
 * The `anna` CLI as a user runs it: real processes, a real ANNA_HOME, real SQLite files.
 */
import { assert, describe, it } from "@effect/vitest"
import { chmodSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { Assembled, CompactionReport, SearchHit, SessionStats, SummaryDescription, ExpandResult } from "../../src/domain/memory/types.ts"
import { anna, annaEnv, annaJson, finish, newHome, start, waitForLine, waitForOutput } from "../support/cli.ts"
import { openHomeDb } from "../support/gatewayDb.ts"
import { toJsonl, transcript } from "../support/transcript.ts"

const homes: Array<string> = []
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const writeTranscript = (dir: string, count: number, seed = 3) => {
  const file = join(dir, `t${count}-${seed}.jsonl`)
  writeFileSync(file, toJsonl(transcript(count, seed)))
  return file
}

const commands = [
  [],
  ["gateway"],
  ["memory"],
  ["memory", "sessions"],
  ["memory", "import"],
  ["memory", "delete"],
  ["memory", "assemble"],
  ["memory", "compact"],
  ["memory", "search"],
  ["memory", "describe"],
  ["memory", "expand"],
  ["memory", "verify"],
  ["memory", "stats"],
  ["memory", "export"],
  ["plugin"],
  ["plugin", "list"],
  ["plugin", "enable"],
  ["plugin", "disable"],
  ["plugin", "inherit"],
  ["plugin", "config"],
  ["schedule"],
  ["schedule", "add"],
  ["schedule", "list"],
  ["schedule", "remove"],
  ["schedule", "run"],
  ["schedule", "history"],
  ["skill"],
  ["skill", "install"],
  ["skill", "list"],
  ["skill", "remove"],
  ["skill", "rank"],
  ["skill", "feedback"],
  ["mcp"],
  ["mcp", "add"],
  ["mcp", "list"],
  ["mcp", "remove"],
  ["mcp", "serve"],
  ["playbook"],
  ...["list", "show", "sweep", "review", "apply", "context", "add", "promote", "remove"].map((c) => ["playbook", c]),
  ["diary"],
  ["diary", "list"],
  ["diary", "show"],
  ["diary", "reflect"]
]

describe("anna CLI", () => {
  it("answers --help on every command with its usage and exit code 0", async () => {
    const h = home()
    // Four at a time: one after another, a loaded machine took longer than the test's two minutes.
    const queue = [...commands]
    const worker = async () => {
      for (let cmd = queue.shift(); cmd !== undefined; cmd = queue.shift()) {
        const r = await anna(h, ...cmd, "--help")
        assert.strictEqual(r.code, 0, `anna ${cmd.join(" ")} --help: ${r.stderr}`)
        assert.include(r.stdout, `USAGE\n  anna${cmd.length > 0 ? " " + cmd.join(" ") : ""}`)
      }
    }
    await Promise.all([worker(), worker(), worker(), worker()])
  }, 600_000)

  it("reports user mistakes in one line, without a stack trace, with exit codes 1 and 2", async () => {
    const h = home()
    const missing = await anna(h, "memory", "stats", "no-such-session")
    assert.strictEqual(missing.code, 1)
    assert.strictEqual(missing.stderr.trim(), "anna: no session \"no-such-session\" in memory")
    const badFlag = await anna(h, "memory", "assemble", "k", "--budget", "lots")
    assert.strictEqual(badFlag.code, 2)
    assert.include(badFlag.stdout + badFlag.stderr, "Invalid value for flag --budget")
    const noFile = await anna(h, "memory", "import", "k", join(h, "nope.jsonl"))
    assert.strictEqual(noFile.code, 1)
    assert.include(noFile.stderr, "no such file")
    assert.notInclude(noFile.stderr, "    at ")
  })

  it("answers a usage error with the problem, the command's usage and where to read more, on stderr, exit 2", async () => {
    const h = home()
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string, string, string]> = [
      [
        ["nosuch"],
        "anna: Unknown subcommand \"nosuch\" for \"anna\"",
        "usage: anna [--host HOST] [--port N] [--database-url DATABASE_URL] | anna <gateway|chat|onboard|provider|agent|user|admin|channel|sandbox|memory|plugin|settings|notify|schedule|skill|mcp|playbook|diary|db|cluster|doctor>",
        "run `anna --help` for more"
      ],
      [
        ["memory", "srch", "x"],
        "anna: Unknown subcommand \"srch\" for \"anna memory\" (did you mean search?)",
        "usage: anna memory <sessions|import|export|delete|assemble|compact|search|describe|expand|verify|stats>",
        "run `anna memory --help` for more"
      ],
      [
        ["memory", "sessions", "--bogus"],
        "anna: Unrecognized flag: --bogus in command anna memory sessions",
        "usage: anna memory sessions [--agent AGENT] [--user USER] [--limit N] [--json]",
        "run `anna memory sessions --help` for more"
      ],
      [
        ["memory", "search"],
        "anna: Missing required argument: query",
        "usage: anna memory search <query> [flags]",
        "run `anna memory search --help` for more"
      ],
      [
        ["memory", "assemble", "k", "--budget", "lots"],
        "anna: Invalid value for flag --budget: \"lots\". Expected a string representing a finite number",
        "usage: anna memory assemble <sessionKey> --budget N [--fresh-tail N] [--json]",
        "run `anna memory assemble --help` for more"
      ],
      [
        ["sandbox", "build-image", "--rootfs", "/tmp", "--busybox", "/bin/busybox"],
        "anna: give at most one of --rootfs <folder-or-tar> and --busybox <path>",
        "usage: anna sandbox build-image [--rootfs ROOTFS] [--busybox BUSYBOX] [--node NODE] [--tag TAG]",
        "run `anna sandbox build-image --help` for more"
      ]
    ]
    for (const [args, problem, usage, more] of cases) {
      const r = await anna(h, ...args)
      const what = `anna ${args.join(" ")}`
      assert.strictEqual(r.code, 2, what)
      assert.strictEqual(r.stdout, "", what)
      assert.deepStrictEqual(r.stderr.trimEnd().split("\n"), [problem, usage, more], what)
    }
  })

  it("refuses an ANNA_LOG_LEVEL it does not know in one line naming the levels, exit 2", async () => {
    const h = home()
    const r = await annaEnv(h, { ANNA_LOG_LEVEL: "bogus" }, "memory", "sessions")
    assert.deepStrictEqual([r.code, r.stdout, r.stderr], [
      2,
      "",
      "anna: ANNA_LOG_LEVEL=\"bogus\" is not a log level; use one of all, trace, debug, info, warn, error, fatal, none\n"
    ])
    const fine = await annaEnv(h, { ANNA_LOG_LEVEL: "DEBUG" }, "memory", "sessions", "--json")
    assert.strictEqual(fine.code, 0, fine.stderr)
  })

  it("ANNA_WORKSPACES and ANNA_SKILLS move the workspaces root (created 0700) and the global skills; a relative path is refused, exit 2", async () => {
    const h = home()
    const bad = await annaEnv(h, { ANNA_WORKSPACES: "shared/ws" }, "memory", "sessions")
    assert.deepStrictEqual([bad.code, bad.stdout, bad.stderr], [
      2,
      "",
      "anna: ANNA_WORKSPACES=\"shared/ws\" must be an absolute path (the folder of agents' folders and users' workspaces)\n"
    ])
    const root = join(home(), "mnt", "anna-workspaces")
    const made = await annaEnv(h, { ANNA_WORKSPACES: root }, "agent", "set", "w1")
    assert.strictEqual(made.code, 0, made.stderr)
    assert.strictEqual(statSync(root).mode & 0o777, 0o700)
    mkdirSync(join(root, "w1"))
    const removed = await annaEnv(h, { ANNA_WORKSPACES: root }, "agent", "remove", "w1", "--yes", "--json")
    assert.strictEqual(removed.code, 0, removed.stderr)
    assert.strictEqual((JSON.parse(removed.stdout) as { folder: string | null }).folder, join(root, "w1"))
    assert.isFalse(existsSync(join(h, "workspaces", "w1")))
    // ANNA_SKILLS: the global skills are read from there (on a cluster, the shared storage).
    const skills = join(home(), "mnt", "anna-skills")
    mkdirSync(join(skills, "hello"), { recursive: true })
    writeFileSync(join(skills, "hello", "SKILL.md"), "---\nname: hello\ndescription: Says hello\n---\nSay hello.\n")
    const listed = await annaEnv(h, { ANNA_SKILLS: skills }, "skill", "list", "--json")
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.deepStrictEqual((JSON.parse(listed.stdout) as Array<{ name: string }>).map((x) => x.name), ["hello"])
    const without = await anna(h, "skill", "list", "--json")
    assert.deepStrictEqual(JSON.parse(without.stdout), [])
    const relative = await annaEnv(h, { ANNA_SKILLS: "skills" }, "skill", "list")
    assert.deepStrictEqual([relative.code, relative.stderr], [2, "anna: ANNA_SKILLS=\"skills\" must be an absolute path (the folder of the global skills)\n"])
  })

  it("ANNA_LOG_FORMAT=json writes every log line as one JSON object with its trace ids; another format is refused, exit 2", async () => {
    const h = home()
    const bad = await annaEnv(h, { ANNA_LOG_FORMAT: "xml" }, "memory", "sessions")
    assert.deepStrictEqual([bad.code, bad.stdout, bad.stderr], [2, "", "anna: ANNA_LOG_FORMAT=\"xml\" is not a log format; use text or json\n"])
    const r = await annaEnv(h, { ANNA_LOG_FORMAT: "JSON", ANNA_LOG_LEVEL: "debug" }, "user", "add", "bob")
    assert.strictEqual(r.code, 0, r.stderr)
    const lines = r.stderr.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.isAbove(lines.length, 1)
    for (const l of lines) {
      assert.match(String(l["time"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.include(["DEBUG", "INFO", "WARN", "ERROR"], l["level"])
    }
    assert.isTrue(lines.some((l) => /^[0-9a-f]{32}$/.test(String(l["trace_id"])) && /^[0-9a-f]{16}$/.test(String(l["span_id"]))))
  })

  it("ANNA_DATABASE_URL: not a postgres:// URL is one line and exit 2; a server that is not there is named, masked, exit 1", async () => {
    const h = home()
    for (const args of [["memory", "sessions"], ["gateway", "--port", "0"]]) {
      const bad = await annaEnv(h, { ANNA_DATABASE_URL: "mysql://anna:s3cret-pw@db.example/anna" }, ...args)
      assert.strictEqual(bad.code, 2, bad.stderr)
      assert.strictEqual(bad.stdout, "")
      assert.match(bad.stderr, /^anna: ANNA_DATABASE_URL has the scheme "mysql": expected postgres:\/\/USER:PASSWORD@HOST:5432\/DATABASE \(or postgresql:\/\/…\)\n$/)
      assert.notInclude(bad.stderr, "s3cret")
    }
    const absent = await annaEnv(h, { ANNA_DATABASE_URL: "postgres://anna:s3cret-pw@db.invalid:5432/anna" }, "memory", "sessions")
    assert.strictEqual(absent.code, 1, absent.stderr)
    assert.match(absent.stderr, /^anna: could not open the PostgreSQL database at db\.invalid:5432 \(postgres:\/\/anna:\*\*\*@db\.invalid:5432\/anna\): .+\n$/)
    assert.notInclude(absent.stderr, "s3cret")
    // empty is unset
    const fine = await annaEnv(h, { ANNA_DATABASE_URL: " " }, "memory", "sessions", "--json")
    assert.strictEqual(fine.code, 0, fine.stderr)
  })

  it("anna help [command] prints that command's --help; a name that is no command is a usage error", async () => {
    const h = home()
    for (const cmd of [[], ["memory"], ["memory", "search"], ["sandbox", "build-image"]]) {
      const help = await anna(h, "help", ...cmd)
      const flag = await anna(h, ...cmd, "--help")
      assert.strictEqual(help.code, 0, `anna help ${cmd.join(" ")}`)
      assert.strictEqual(help.stdout, flag.stdout, `anna help ${cmd.join(" ")}`)
      assert.include(help.stdout, `USAGE\n  anna${cmd.length > 0 ? " " + cmd.join(" ") : ""}`)
    }
    const nosuch = await anna(h, "help", "nosuch")
    assert.deepStrictEqual([nosuch.code, nosuch.stdout], [2, ""])
    assert.strictEqual(nosuch.stderr.split("\n")[0], "anna: Unknown subcommand \"nosuch\" for \"anna\"")
    // Words after a command that has no subcommands are not run as its arguments.
    const extra = await anna(h, "help", "memory", "delete", "k")
    assert.deepStrictEqual([extra.code, extra.stdout], [2, ""])
    assert.deepStrictEqual(extra.stderr.trimEnd().split("\n"), [
      "anna: Unknown subcommand \"k\" for \"anna memory delete\"",
      "usage: anna memory delete <sessionKey> [--yes] [--json]",
      "run `anna memory delete --help` for more"
    ])
  })

  it("writes log lines to stderr only: --json prints exactly one JSON document on stdout", async () => {
    const h = home()
    // A shared (sticky) ANNA_HOME makes every command that opens the database log a warning.
    chmodSync(h, 0o1777)
    for (const args of [["memory", "sessions", "--json"], ["plugin", "list", "--json"]]) {
      const r = await anna(h, ...args)
      assert.strictEqual(r.code, 0, r.stderr)
      assert.doesNotThrow(() => JSON.parse(r.stdout), undefined, undefined, `stdout of anna ${args.join(" ")}: ${r.stdout}`)
      assert.match(r.stderr, /^\[[\d:.]+\] WARN \(#\d+\): ANNA_HOME .* is a shared folder/m)
    }
    const sessions = await anna(h, "memory", "sessions", "--json")
    assert.deepStrictEqual(JSON.parse(sessions.stdout), [])
  })

  it("imports a transcript once, refuses a second import unless --append, and loses nothing on a bad file", async () => {
    const h = home()
    const file = writeTranscript(h, 3000)
    const first = await annaJson<{ imported: number; lastSeq: number }>(h, "memory", "import", "a1:cli:u1:main", file)
    assert.deepStrictEqual([first.imported, first.lastSeq], [3000, 3000])
    const again = await anna(h, "memory", "import", "a1:cli:u1:main", file)
    assert.strictEqual(again.code, 1)
    assert.include(again.stderr, "already has 3000 messages")
    const appended = await annaJson<{ lastSeq: number }>(h, "memory", "import", "a1:cli:u1:main", file, "--append")
    assert.strictEqual(appended.lastSeq, 6000)

    const bad = join(h, "bad.jsonl")
    writeFileSync(
      bad,
      [
        JSON.stringify({ role: "user", content: "fine" }),
        "{not json",
        JSON.stringify({ role: "robot", content: "x" }),
        JSON.stringify({ role: "user", content: "late", ts: "yesterday" })
      ].join("\n")
    )
    const r = await anna(h, "memory", "import", "other", bad)
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr, "line 2: not valid JSON")
    assert.include(r.stderr, "line 3:")
    assert.include(r.stderr, "line 4: \"ts\" is not an ISO-8601 time")
    const sessions = await annaJson<Array<{ sessionKey: string }>>(h, "memory", "sessions")
    assert.deepStrictEqual(sessions.map((s) => s.sessionKey), ["a1:cli:u1:main"])
  })

  it("compacts, verifies, assembles within budget, searches, describes and expands", async () => {
    const h = home()
    const file = writeTranscript(h, 5000, 11)
    await annaJson(h, "memory", "import", "a1:cli:u1:main", file)
    const report = await annaJson<CompactionReport>(h, "memory", "compact", "a1:cli:u1:main", "--full")
    assert.isTrue(report.compacted)
    assert.isTrue(report.condensedSummaries > 0)
    assert.isBelow(report.tokensAfter, report.tokensBefore)
    assert.include(["no_candidates", "no_progress", "max_iterations"], report.stopReason)

    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stderr)
    assert.include(verify.stdout, "OK: 1 session(s), 5000 messages")

    const stats = await annaJson<SessionStats>(h, "memory", "stats", "a1:cli:u1:main")
    assert.strictEqual(stats.messages, 5000)
    assert.strictEqual(stats.contextTokens, report.tokensAfter)

    const a = await annaJson<Assembled>(h, "memory", "assemble", "a1:cli:u1:main", "--budget", "3000")
    assert.isAtMost(a.tokens, 3000)
    // The fresh tail adapts to the budget (at most 20 messages and 40 % of it, issue 11), never empty.
    assert.isTrue(a.freshTailMessages >= 1 && a.freshTailMessages <= 20, `${a.freshTailMessages}`)

    const en = await annaJson<Array<SearchHit>>(h, "memory", "search", "sqlite docker", "--limit", "5")
    assert.isTrue(en.length > 0 && en.length <= 5)
    for (let i = 1; i < en.length; i++) assert.isAtMost(en[i]?.score ?? 0, en[i - 1]?.score ?? 0)
    assert.match(en[0]?.snippet ?? "", /«(sqlite|docker)»/i)
    const zh = await annaJson<Array<SearchHit>>(h, "memory", "search", "配置文件", "--session", "a1:cli:u1:main")
    assert.isTrue(zh.length > 0)
    assert.include(zh[0]?.snippet ?? "", "«配置文件»")
    const weird = await anna(h, "memory", "search", "\"unbalanced NOT key:value * - % _ 🎉", "--json")
    assert.strictEqual(weird.code, 0, weird.stderr)

    const top = a.messages[0]
    const id = typeof top?.content === "string" ? /id="(sum_\d+)"/.exec(top.content)?.[1] : undefined
    assert.isDefined(id)
    const d = await annaJson<SummaryDescription>(h, "memory", "describe", id ?? "")
    assert.strictEqual(d.kind, "condensed")
    assert.isTrue(d.childSummaries.length >= 2)
    const page = await annaJson<ExpandResult>(h, "memory", "expand", id ?? "")
    assert.deepStrictEqual(page.items.map((i) => i.id), d.childSummaries.slice(0, page.items.length))
  })

  it("switches memory plugins both ways without losing messages", async () => {
    const h = home()
    await annaJson(h, "memory", "import", "k", writeTranscript(h, 400, 5))
    const off = await anna(h, "plugin", "disable", "memory/lcm")
    assert.strictEqual(off.code, 0, off.stderr)
    assert.include(off.stdout, "enabled memory/simple")
    const list = await annaJson<Array<{ id: string; kind: string; enabled: boolean }>>(h, "plugin", "list")
    assert.deepStrictEqual(list.filter((p) => p.enabled && p.kind === "memory").map((p) => p.id), ["memory/simple"])
    const simple = await annaJson<Assembled>(h, "memory", "assemble", "k", "--budget", "100000000")
    assert.strictEqual(simple.messages.length, 400)
    // Simple compacts into one handoff summary: summary + acknowledgement + the fresh tail
    const compact = await annaJson<{ compacted: boolean; leafSummaries: number }>(h, "memory", "compact", "k")
    assert.deepInclude(compact, { compacted: true, leafSummaries: 1 })
    const handed = await annaJson<Assembled>(h, "memory", "assemble", "k", "--budget", "100000000")
    assert.strictEqual(handed.summaries, 1)
    assert.strictEqual(handed.messages.length, 2 + handed.freshTailMessages)
    await annaJson(h, "memory", "import", "k", writeTranscript(h, 50, 6), "--append")
    const on = await anna(h, "plugin", "enable", "memory/lcm")
    assert.include(on.stdout, "disabled memory/simple")
    // LCM reads the handoff summary as one depth-0 summary, followed by every later message
    const lcm = await annaJson<Assembled>(h, "memory", "assemble", "k", "--budget", "100000000")
    assert.strictEqual(lcm.summaries, 1)
    assert.strictEqual(lcm.messages.length, 1 + handed.freshTailMessages + 50)
    assert.strictEqual((await anna(h, "memory", "verify", "k")).code, 0)
    const unknown = await anna(h, "plugin", "enable", "memory/nope")
    assert.strictEqual(unknown.code, 2, "not one of anna's plugins: a usage error")
    assert.include(unknown.stderr, "no plugin \"memory/nope\"")
  })

  it("verify reports a damaged context and exits 1", async () => {
    const h = home()
    await annaJson(h, "memory", "import", "k", writeTranscript(h, 100, 9))
    const db = openHomeDb(h)
    db.exec("DELETE FROM ctx_items WHERE position = 50")
    db.close()
    const r = await anna(h, "memory", "verify", "k")
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr, "expected to start at 50")
    assert.include(r.stderr, "verify found")
  })

  it("runs the gateway on the defaults until SIGTERM, then exits 0", async () => {
    const h = home()
    const child = start(h, [], "info")
    const done = finish(child)
    await waitForOutput(child, "press Ctrl+C to stop")
    const db = openHomeDb(h, { readOnly: true })
    const plugins = db.all("SELECT id FROM plugins WHERE enabled = 1 ORDER BY id")
    db.close()
    assert.deepStrictEqual(plugins.map((p) => p.id), ["learning", "mcp", "memory/lcm", "webfetch"])
    child.kill("SIGTERM")
    const r = await done
    assert.strictEqual(r.code, 0, r.stdout + r.stderr)
    assert.include(r.stderr, "anna gateway: stopping")
  })

  it("survives SIGKILL during compact --full: verify passes and no message is lost", async () => {
    const h = home()
    await annaJson(h, "memory", "import", "k", writeTranscript(h, 30_000, 13))
    const child = start(h, ["memory", "compact", "k", "--full"])
    const done = finish(child)
    // Kill once compaction has committed something (it is still far from done then): the command
    // reports its progress on stderr after each committed summary.
    const committed = await waitForLine(child, (line) => {
      const m = /^compacting k: .*; (\d+) leaf \+ (\d+) condensed summaries$/.exec(line)
      return m !== null && Number(m[1]) + Number(m[2]) >= 3 ? Number(m[1]) + Number(m[2]) : undefined
    })
    const db = openHomeDb(h, { readOnly: true })
    const summaries = Number(db.get("SELECT count(*) AS n FROM ctx_summaries")?.["n"])
    db.close()
    assert.isAtLeast(summaries, committed, "the reported summaries are committed")
    child.kill("SIGKILL")
    const killed = await done
    assert.strictEqual(killed.signal, "SIGKILL")
    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stderr)
    const stats = await annaJson<SessionStats>(h, "memory", "stats", "k")
    assert.strictEqual(stats.messages, 30_000)
    // Compaction picks up where it was killed.
    const report = await annaJson<CompactionReport>(h, "memory", "compact", "k", "--full")
    assert.isTrue(report.compacted)
    assert.strictEqual((await anna(h, "memory", "verify")).code, 0)
  })
})
