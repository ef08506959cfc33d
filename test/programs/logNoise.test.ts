/**
 * Log noise on user-facing commands (issue 24), through the real CLI: `anna notify` prints no Node
 * deprecation warning (grammy's node-fetch and whatwg-url called `url.parse()` and `punycode` from the
 * bundle); Node's process warnings are anna's log lines — one line each, a dependency's deprecation at
 * debug level, any other warning once at warn level, never Node's two-line print; `anna mcp list`
 * logs the EX-009 exception path of a remote MCP server as one line, at debug level.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { resolve } from "node:path"
import { afterAll } from "vitest"
import * as SqliteConfigStore from "../../src/layers/config/SqliteConfigStore.ts"
import { ConfigStore } from "../../src/services/ConfigStore.ts"
import { removeTemp } from "../support/cleanup.ts"
import { finish, newHome, type Run, start } from "../support/cli.ts"
import { startFakeFeishu } from "../support/fakeFeishu/server.ts"
import { startFakeTelegram } from "../support/fakeTelegram/server.ts"
import { startEverythingHttp } from "../support/mcpServers.ts"
import { homeDatabase } from "../support/db.ts"

const homes: Array<string> = []
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}
afterAll(async () => {
  for (const h of homes) await removeTemp(h)
})

const run = async (h: string, args: ReadonlyArray<string>, level = "info", env: Readonly<Record<string, string>> = {}): Promise<Run> => {
  const r = await finish(start(h, args, level, env))
  assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stdout}${r.stderr}`)
  return r
}

const withConfig = <A, E>(h: string, self: Effect.Effect<A, E, ConfigStore>) =>
  Effect.runPromise(self.pipe(Effect.provide(SqliteConfigStore.layerWithStores(h).pipe(Layer.provideMerge(homeDatabase(h))))))

/** What Node prints for a warning by itself, as opposed to a log line of anna's. */
const NODE_PRINT = /DeprecationWarning|\(node:\d+\)|--trace-(deprecation|warnings)/

const LOG_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] (DEBUG|INFO|WARN|ERROR) \(#\d+\)(?: \S+=\d+ms)*: /

describe("anna notify: no Node deprecation warnings", () => {
  it("delivers on Telegram and on Feishu with nothing on stderr (info level, as a user runs it)", async () => {
    const token = "777000:LogNoiseTestTokenLogNoiseTest00"
    const tg = await startFakeTelegram({ token, botUsername: "quiet_bot" })
    const fs = await startFakeFeishu()
    try {
      const h = home()
      await run(h, ["channel", "set", "telegram", "--config", `token=${token}`, "--config", `base_url=${tg.apiRoot}`])
      await run(h, ["channel", "enable", "telegram"])
      await run(h, ["channel", "set", "feishu", "--config", `app_id=${fs.appId}`, "--config", `app_secret=${fs.appSecret}`, "--config", `base_url=${fs.baseUrl}`])
      await run(h, ["channel", "enable", "feishu"])
      const openId = "ou_lognoise00000000000000000000001"
      const ann = await withConfig(h, ConfigStore.use((c) => c.upsertUser("telegram", "4242", "Ann")))
      const bob = await withConfig(h, ConfigStore.use((c) => c.upsertUser("feishu", openId, "Bob")))
      tg.sendUserMessage({ chatId: 4242, chatType: "private", from: { id: 4242, first_name: "Ann" }, text: "hello" })

      const telegram = await run(h, ["notify", ann.id, "Backup **done**"])
      assert.strictEqual(telegram.stdout.trim(), `Delivered to ${ann.id} on telegram.`)
      assert.notMatch(telegram.stderr, NODE_PRINT, telegram.stderr)
      assert.strictEqual(telegram.stderr, "")
      const feishu = await run(h, ["notify", bob.id, "Backup **done**", "--channel", "feishu"])
      assert.include(feishu.stdout, "on feishu")
      assert.notMatch(feishu.stderr, NODE_PRINT, feishu.stderr)
      assert.strictEqual(feishu.stderr, "")
    } finally {
      await tg.close()
      await fs.close()
    }
  }, 60_000)
})

describe("Node's process warnings are anna's log lines", () => {
  // Loads `punycode` and overfills two emitters as anna loads its commands (see the fixture).
  const EMIT = { NODE_OPTIONS: `--import=${resolve(import.meta.dirname, "../fixtures/warnings/emit.mjs")}` }

  it("a dependency's deprecation is one debug line, another warning one warn line, once; Node prints nothing itself", async () => {
    const h = home()
    const quiet = await run(h, ["user", "list"], "info", EMIT)
    assert.notMatch(quiet.stderr, NODE_PRINT, quiet.stderr)
    const lines = quiet.stderr.split("\n").filter((l) => l !== "")
    assert.strictEqual(lines.length, 1, quiet.stderr)
    assert.match(lines[0] ?? "", LOG_LINE)
    assert.match(lines[0] ?? "", /WARN \(#\d+\): MaxListenersExceededWarning: Possible EventEmitter memory leak detected\. 11 tick listeners added/)

    const debug = await run(h, ["user", "list"], "debug", EMIT)
    const deprecation = debug.stderr.split("\n").filter((l) => l.includes("DEP0040"))
    assert.strictEqual(deprecation.length, 1, debug.stderr)
    assert.match(deprecation[0] ?? "", /^\[[\d:.]+\] DEBUG \(#\d+\): DeprecationWarning \[DEP0040\]: The `punycode` module is deprecated\./)
    assert.notMatch(debug.stderr, /\(node:\d+\)|--trace-/, debug.stderr)
    assert.strictEqual(debug.stderr.split("\n").filter((l) => l.includes("MaxListenersExceededWarning")).length, 1, debug.stderr)
  }, 30_000)
})

describe("anna mcp list with a remote MCP server", () => {
  it("logs the EX-009 exception path as one line at debug level, and nothing at info", async () => {
    const server = await startEverythingHttp()
    try {
      const h = home()
      await run(h, ["mcp", "add", "live", "--url", server.url])
      const quiet = await run(h, ["mcp", "list"])
      assert.include(quiet.stdout, server.url)
      assert.strictEqual(quiet.stderr, "")
      const debug = await run(h, ["mcp", "list"], "debug")
      const audit = debug.stderr.split("\n").filter((l) => l.includes("exception_path") || l.includes("EX-009"))
      assert.deepStrictEqual(audit.length, 1, debug.stderr)
      assert.match(
        audit[0] ?? "",
        /^\[[\d:.]+\] DEBUG \(#\d+\): runtime\.exception_path exception_id=EX-009 mcp_server=live agent=default host=127\.0\.0\.1:\d+ transport=http$/
      )
    } finally {
      await server.stop()
    }
  }, 60_000)
})
