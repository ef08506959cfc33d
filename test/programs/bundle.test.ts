/**
 * The `anna` binary as `npm run build` makes it (scripts/bundle.mjs, built here into a folder of its
 * own): `anna --help` printed from the pre-rendered file is byte for byte what the CLI renders
 * (`anna -h`), on a terminal too, and so is `anna help`; a memory command works from the bundle and
 * starts without loading a model SDK or the Docker client; an older Node than anna needs gets one line
 * saying so, not a stack trace.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { MIN_NODE } from "../../src/programs/start.ts"
import { type Bundle, buildBundle, ROOT } from "../support/bundle.ts"
import { newHome, childEnv } from "../support/spawnAnna.ts"

let bundle: Bundle
let out = ""
const homes: Array<string> = []

beforeAll(() => {
  bundle = buildBundle()
  out = bundle.out
}, 120_000)
afterAll(() => {
  // (Undefined when the build failed: that failure is the one to see.)
  bundle?.remove()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

/** Logs every module the process resolves to stderr ("LOADED <url>"). */
const TRACE = `data:text/javascript,${encodeURIComponent(
  'import { registerHooks } from "node:module"; registerHooks({ resolve(s, c, n) { const r = n(s, c); process.stderr.write("LOADED " + r.url + "\\n"); return r } })'
)}`

const run = (
  args: ReadonlyArray<string>,
  options: { readonly tty?: boolean; readonly trace?: boolean; readonly home?: string; readonly node?: string } = {}
) => {
  const home = options.home ?? newHome()
  homes.push(home)
  const flags = [...(options.tty === true ? ["--import", "data:text/javascript,process.stdout.isTTY=true"] : []), ...(options.trace === true ? ["--import", TRACE] : [])]
  const env: Record<string, string | undefined> = { ...childEnv(home, {}) }
  delete env.NO_COLOR
  return spawnSync(options.node ?? process.execPath, [...flags, join(out, "main.js"), ...args], { env, encoding: "utf8" })
}

const loaded = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("LOADED ")).map((l) => l.slice(7))
const HEAVY = ["/node_modules/openai/", "/node_modules/@anthropic-ai/sdk/", "/node_modules/dockerode/"]

describe("the bundled anna binary", () => {
  it("prints --help from the pre-rendered text, identical to what the CLI renders, plain and on a terminal", () => {
    assert.isTrue(existsSync(join(out, "help.txt")))
    const cached = run(["--help"])
    const live = run(["-h"])
    assert.strictEqual(cached.status, 0)
    assert.strictEqual(cached.stdout, live.stdout)
    assert.strictEqual(cached.stdout, readFileSync(join(out, "help.txt"), "utf8"))
    assert.include(cached.stdout, "SUBCOMMANDS")
    const ttyCached = run(["--help"], { tty: true })
    const ttyLive = run(["-h"], { tty: true })
    assert.strictEqual(ttyCached.stdout, ttyLive.stdout)
    assert.include(ttyCached.stdout, "\x1b[", "colors on a terminal")
  })

  it("prints the same for anna help", () => {
    const help = run(["help"])
    assert.strictEqual(help.status, 0)
    assert.strictEqual(help.stdout, run(["-h"]).stdout)
    const memory = run(["help", "memory"])
    assert.strictEqual(memory.status, 0)
    assert.strictEqual(memory.stdout, run(["memory", "-h"]).stdout)
  })

  it("says in one line that an older Node cannot run it, exit 1 (the system's Node 20 here)", (ctx) => {
    const engines = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { engines: { node: string } }).engines.node
    assert.strictEqual(engines, `>=${MIN_NODE}`)
    const old = "/usr/bin/node"
    const version = existsSync(old) ? spawnSync(old, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim() : ""
    const [major = 0, minor = 0] = version.split(".").map(Number)
    if (version === "" || major > 22 || (major === 22 && minor >= 19)) return ctx.skip(`no Node older than ${MIN_NODE} at ${old}`)
    for (const args of [["memory", "sessions"], ["--help"], []]) {
      const r = run(args, { node: old })
      assert.deepStrictEqual([r.status, r.stdout, r.stderr], [
        1,
        "",
        `anna: needs Node.js ${MIN_NODE.replace(/\.0$/, "")} or newer (this is ${version}); run it with npm start or npx node dist/main.js, which use the Node 24 this project installs\n`
      ], `anna ${args.join(" ")}`)
    }
  })

  it("runs a memory command without loading a model SDK or the Docker client; a provider command loads its SDK", () => {
    const home = newHome()
    const memory = run(["memory", "sessions", "--json"], { trace: true, home })
    assert.strictEqual(memory.status, 0, memory.stderr)
    assert.strictEqual(memory.stdout.trim(), "[]")
    const modules = loaded(memory.stderr)
    assert.isTrue(modules.some((m) => m.includes("/chunks/")), "the trace sees the bundle's chunks")
    assert.deepStrictEqual(modules.filter((m) => HEAVY.some((h) => m.includes(h))), [])
    // The same trace does see an SDK when a command needs one (so the check above can fail).
    assert.strictEqual(run(["provider", "add", "x", "--type", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k", "--default-model", "m"], { home }).status, 0)
    const models = run(["provider", "models", "x"], { trace: true, home })
    assert.isTrue(loaded(models.stderr).some((m) => m.includes("/node_modules/openai/")))
    assert.isFalse(loaded(models.stderr).some((m) => m.includes("/node_modules/dockerode/")))
  })
})
