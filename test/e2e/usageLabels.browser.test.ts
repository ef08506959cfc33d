/**
 * The console's usage tables and spend charts name every row (issue 24): model calls made for no
 * user — `anna memory compact` run from the command line, say — are stored under user "" and were
 * shown as a row with an empty name. Real gateway process, real headless Chromium.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { resolve } from "node:path"
import { Effect, Layer } from "effect"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import * as SqliteConfigStore from "../../src/layers/config/SqliteConfigStore.ts"
import { UsageLog } from "../../src/services/UsageLog.ts"
import { anna, finish, MAIN, newHome, start, waitForLine } from "../support/cli.ts"
import { browserRequired, browserUnavailable, launchChromium } from "../support/browser.ts"
import { removeTemp } from "../support/cleanup.ts"
import { freePort } from "../support/ports.ts"
import { childEnv } from "../support/spawnAnna.ts"
import { homeDatabase } from "../support/db.ts"

const ROOT = resolve(import.meta.dirname, "../..")
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const PASSWORD = "admin-password-1"

const unavailable = browserUnavailable()
const runIt = unavailable === undefined || browserRequired()
if (!runIt) console.warn(`e2e usage labels: skipped, ${unavailable} (set ANNA_REQUIRE_BROWSER=1 to fail instead)`)

/** Model calls as the usage log records them: one for alice, one made for no user (a CLI compaction). */
const seedUsage = (home: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const usage = yield* UsageLog
      const tokens = { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 }
      yield* usage.record({ providerId: "p1", model: "m", purpose: "chat", sessionKey: "a1:http:alice:dm", agentId: "a1", userId: "alice", usage: tokens })
      yield* usage.record({ providerId: "p1", model: "m", purpose: "summary", sessionKey: "a1:http:alice:dm", agentId: "a1", usage: tokens })
    }).pipe(Effect.provide(SqliteConfigStore.layerWithStores(home).pipe(Layer.provideMerge(homeDatabase(home)))))
  )

describe.runIf(runIt)("e2e: usage rows without a user in the console", () => {
  let home = ""
  let gateway: ChildProcess | undefined
  let base = ""
  let browser: Browser | undefined

  beforeAll(async () => {
    execFileSync(process.execPath, ["scripts/build-web.mjs"], { cwd: ROOT, stdio: "inherit" })
    home = newHome()
    assert.strictEqual((await anna(home, "channel", "enable", "http")).code, 0)
    const admin = spawn(process.execPath, [MAIN, "admin", "create", "admin", "--password-stdin"], {
      env: { ...childEnv(home, {}), ANNA_LOG_LEVEL: "warn", ...NO_DOCKER },
      stdio: ["pipe", "pipe", "pipe"]
    })
    admin.stdin.end(`${PASSWORD}\n`)
    const created = await finish(admin)
    assert.strictEqual(created.code, 0, created.stderr)
    await seedUsage(home)
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    gateway = start(home, ["gateway", "--port", String(port)], "info", NO_DOCKER)
    const ready = await waitForLine(gateway, (line) => (line.includes("press Ctrl+C") ? "ready" : line.includes("could not start") ? line : undefined))
    assert.strictEqual(ready, "ready")
    browser = await launchChromium()
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    if (gateway !== undefined && gateway.exitCode === null) {
      const done = new Promise((r) => gateway?.once("close", r))
      gateway.kill("SIGTERM")
      await done
    }
    if (home !== "") await removeTemp(home)
  })

  const login = async (): Promise<Page> => {
    if (browser === undefined) throw new Error("no browser")
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    context.setDefaultTimeout(60_000)
    const page = await context.newPage()
    await page.goto(base)
    await page.getByLabel("Username").fill("admin")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Log in" }).click()
    await page.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()
    return page
  }

  it("the dashboard's spend by user and the usage page's By user table name the calls made for no user", async () => {
    const page = await login()
    const spend = page.locator("figure.bars").filter({ hasText: "Spend by user" })
    await spend.locator(".bar-label").first().waitFor({ state: "attached" })
    assert.deepStrictEqual((await spend.locator(".bar-label").allTextContents()).sort(), ["(no user)", "alice"])

    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Usage", exact: true }).click()
    const byUser = page.locator("table").filter({ has: page.locator("caption", { hasText: "By user" }) })
    await byUser.locator("tbody th").first().waitFor({ state: "attached" })
    assert.deepStrictEqual((await byUser.locator("tbody th").allTextContents()).sort(), ["(no user)", "alice"])
  }, 120_000)
})
