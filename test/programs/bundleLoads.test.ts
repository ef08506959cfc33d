/**
 * What users run is what is tested (issue 24): the `anna` binary as `npm run build` bundles it (built
 * here into a folder of its own) loads every chunk it may import lazily — every channel kind, command
 * group and SDK — without a module-scope error or a warning the sources do not print; no bundled
 * dependency reads `__dirname`/`__filename` (in a bundle they name the chunk's folder, not the
 * dependency's); every command group's `--help` works; the gateway comes up with each channel kind
 * against the fake platforms; `anna doctor --json` with Feishu enabled answers with its report.
 *
 * Why: the Lark SDK read `__dirname` when its chunk loaded, which an ES module bundle does not
 * define; from the sources it worked, so every test passed while `npm start` could not run Feishu.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ChildProcess } from "node:child_process"
import { execFileSync } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { GROUP_NAMES } from "../../src/programs/cli.ts"
import { type Bundle, buildBundle, ROOT } from "../support/bundle.ts"
import { finish, newHome, type Run, startEntry } from "../support/spawnAnna.ts"
import { startFakeFeishu } from "../support/fakeFeishu/server.ts"
import { startFakeQq } from "../support/fakeQq/server.ts"
import { startFakeTelegram } from "../support/fakeTelegram/server.ts"
import { startFakeWechat } from "../support/fakeWechat/server.ts"

let bundle: Bundle
const homes: Array<string> = []
beforeAll(() => {
  bundle = buildBundle()
}, 120_000)
afterAll(() => {
  // (Undefined when the build failed: that failure is the one to see.)
  bundle?.remove()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

/** No Docker engine for these runs: the sandbox is not what they check, and they stay quick. */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const run = (h: string, ...args: Array<string>): Promise<Run> => finish(startEntry(bundle.main, h, args, "warn", NO_DOCKER))

/**
 * Imports every chunk of the bundle, one after another, in a Node of its own (an ES module: a CommonJS
 * `node -e` would lend the chunks its own `__dirname`), and prints what failed and what Node warned.
 */
const IMPORT_ALL = `
import { readdirSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
const dir = process.argv[1]
const warnings = []
process.on("warning", (w) => warnings.push(w.name + ": " + w.message))
const chunks = readdirSync(dir).filter((f) => f.endsWith(".js")).sort()
const failures = []
for (const chunk of chunks) {
  try {
    await import(pathToFileURL(join(dir, chunk)).href)
  } catch (e) {
    failures.push(chunk + ": " + (e instanceof Error ? e.message : String(e)))
  }
}
// A warning is emitted on the next tick.
await new Promise((done) => setImmediate(done))
process.stdout.write(JSON.stringify({ chunks: chunks.length, failures, warnings }))
process.exit(0)
`

describe("the bundled anna binary loads what it loads lazily", () => {
  it("imports every chunk without an error or a warning", () => {
    const out = execFileSync(process.execPath, ["--no-warnings=ExperimentalWarning", "--input-type=module", "-e", IMPORT_ALL, join(bundle.out, "chunks")], {
      encoding: "utf8",
      cwd: bundle.out
    })
    const r = JSON.parse(out) as { chunks: number; failures: Array<string>; warnings: Array<string> }
    assert.isAbove(r.chunks, 20, "the bundle is split into chunks")
    assert.deepStrictEqual(r.failures, [])
    assert.deepStrictEqual(r.warnings, [])
  })

  it("bundles no dependency that reads __dirname or __filename (it would get the chunk's folder)", () => {
    // @effect/platform-node asks `typeof __filename === "string"` first and only wants a base to
    // resolve modules from, which the chunk's path is.
    const allowed = ["node_modules/@effect/platform-node/dist/internal/http.js"]
    const readers = Object.keys(bundle.inputs)
      .filter((p) => p.startsWith("node_modules/") && !allowed.includes(p))
      .filter((p) => /\b__(dirname|filename)\b/.test(readFileSync(join(ROOT, p), "utf8")))
    assert.deepStrictEqual(readers, [])
  })

  it("prints every command group's --help", async () => {
    const h = home()
    for (const group of GROUP_NAMES) {
      const r = await run(h, group, "--help")
      assert.deepStrictEqual([r.code, r.stderr], [0, ""], `anna ${group} --help`)
      assert.include(r.stdout, `anna ${group}`, `anna ${group} --help`)
    }
  })
})

/** Resolves with everything the gateway wrote once it says it runs; rejects with it if the gateway exits first. */
const comesUp = (child: ChildProcess): Promise<string> =>
  new Promise((done, fail) => {
    let seen = ""
    const feed = (d: Buffer) => {
      seen += d.toString()
      if (seen.includes("press Ctrl+C to stop")) done(seen)
    }
    child.stdout?.on("data", feed)
    child.stderr?.on("data", feed)
    child.on("close", (code, signal) => fail(new Error(`the gateway exited (${code ?? signal}) before it ran:\n${seen}`)))
  })

interface Platform {
  readonly id: string
  /** The channel's settings, pointed at its fake. */
  readonly config: ReadonlyArray<string>
  readonly close: () => Promise<void>
}

const TELEGRAM_TOKEN = "777000:BundleTestTokenBundleTestToken00"
const PLATFORMS: ReadonlyArray<readonly [string, () => Promise<Platform>]> = [
  ["http", async () => ({ id: "http", config: ["port=0"], close: async () => {} })],
  ["telegram", async () => {
    const tg = await startFakeTelegram({ token: TELEGRAM_TOKEN, botUsername: "bundle_bot" })
    return { id: "telegram", config: [`token=${TELEGRAM_TOKEN}`, `base_url=${tg.apiRoot}`], close: () => tg.close() }
  }],
  ["feishu", async () => {
    const fs = await startFakeFeishu()
    return { id: "feishu", config: [`app_id=${fs.appId}`, `app_secret=${fs.appSecret}`, `base_url=${fs.baseUrl}`], close: () => fs.close() }
  }],
  ["qq", async () => {
    const qq = await startFakeQq()
    return {
      id: "qq",
      config: [`app_id=${qq.appId}`, `app_secret=${qq.secret}`, `base_url=${qq.baseUrl}`, `token_url=${qq.tokenUrl}`],
      close: () => qq.close()
    }
  }],
  ["wechat", async () => {
    const wx = await startFakeWechat()
    return { id: "wechat", config: [`token=${wx.token}`, `base_url=${wx.baseUrl}`, `cdn_base_url=${wx.cdnBaseUrl}`], close: () => wx.close() }
  }]
]

/** A home with only this channel enabled. */
const homeWith = async (p: Platform) => {
  const h = home()
  const set = await run(h, "channel", "set", p.id, ...p.config.flatMap((c) => ["--config", c]))
  assert.strictEqual(set.code, 0, set.stderr)
  for (const args of [["channel", "enable", p.id], ...(p.id === "http" ? [] : [["channel", "disable", "http"]])]) {
    const r = await run(h, ...args)
    assert.strictEqual(r.code, 0, r.stderr)
  }
  return h
}

describe("the bundled anna binary runs every channel kind", () => {
  for (const [kind, platform] of PLATFORMS) {
    it(`comes up with the ${kind} channel against its fake platform, and stops cleanly`, async () => {
      const p = await platform()
      try {
        const h = await homeWith(p)
        const gateway = startEntry(bundle.main, h, ["gateway"], "info", NO_DOCKER)
        const exited = finish(gateway)
        const log = await comesUp(gateway).catch(async (e: unknown) => {
          await exited
          throw e
        })
        gateway.kill("SIGTERM")
        const r = await exited
        assert.match(log, new RegExp(`channel ${kind}: `), log)
        assert.notMatch(log, /Warning/, log)
        assert.strictEqual(r.code, 0, r.stderr)
      } finally {
        await p.close()
      }
    })
  }
})

describe("anna doctor from the bundle", () => {
  it("with Feishu enabled checks it against the platform and prints the report as JSON (exit 0 or 1, not a crash)", async () => {
    const fs = await startFakeFeishu()
    try {
      const h = await homeWith({ id: "feishu", config: [`app_id=${fs.appId}`, `app_secret=${fs.appSecret}`, `base_url=${fs.baseUrl}`], close: async () => {} })
      const r = await run(h, "doctor", "--json")
      assert.include([0, 1], r.code, r.stderr)
      const checks = (JSON.parse(r.stdout) as { checks: Array<{ area: string; name: string; ok: boolean; detail: string }> }).checks
      const feishu = checks.find((c) => c.area === "channels" && c.name === "feishu")
      assert.isTrue(feishu?.ok, JSON.stringify(feishu))
      // The SDK names its own version, as it does from node_modules (it reads its package.json).
      const version = (JSON.parse(readFileSync(join(ROOT, "node_modules/@larksuiteoapi/node-sdk/package.json"), "utf8")) as { version: string }).version
      const sdk = fs.userAgents.filter((ua) => ua.startsWith("oapi-node-sdk/"))
      assert.isNotEmpty(sdk, fs.userAgents.join("\n"))
      for (const ua of sdk) assert.match(ua, new RegExp(`^oapi-node-sdk/${version.replaceAll(".", "\\.")}( |$)`))
    } finally {
      await fs.close()
    }
  })
})
