/**
 * The web console in a real headless Chromium (issue 13), against a real gateway process on a fresh
 * ANNA_HOME and the fake LLM: the operator's first login, adding a provider (the fake LLM), creating
 * an agent, adding a user with a password and restricting the agent to that user; that user then
 * logs in, sees only their pages, chats in the web chat with a streamed answer (stopped mid-stream,
 * then a whole one), finds the conversation in the session browser, and sees the usage chart and its
 * cost (from the price the operator set on the providers page); back as the admin, the dashboard
 * shows the turns and the spend in money, and every page loads without an error.
 * Screenshots go to test-artifacts/. No response of the API carries the provider key or a password.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { resolve } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import { anna, annaJson, finish, MAIN, newHome, start, waitForLine } from "../support/cli.ts"
import { artifact, browserRequired, browserUnavailable, launchChromium } from "../support/browser.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { startFakeWechat } from "../support/fakeWechat/server.ts"
import { freePort } from "../support/ports.ts"
import { childEnv } from "../support/spawnAnna.ts"

const ROOT = resolve(import.meta.dirname, "../..")
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const ADMIN_PASSWORD = "admin-password-1"
const BOB_PASSWORD = "bob-password-22"
const PROVIDER_KEY = "sk-browser-test-secret-9f3a71"
/** The key the operator rotates to: the model calls that follow carry it. */
const ROTATED_KEY = "sk-browser-rotated-key-44c0d2"
const CAROL_PASSWORD = "carol-password-333"
/** A 1×1 PNG and a 1×1 GIF. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
const GIF = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

const unavailable = browserUnavailable()
const runIt = unavailable === undefined || browserRequired()
if (!runIt) console.warn(`e2e console: skipped, ${unavailable} (set ANNA_REQUIRE_BROWSER=1 to fail instead)`)

const suite = fakeLlmSuite({ reset: false })

/** The page's `document` as the function below sees it (the tests compile without the DOM's types). */
type PageGlobal = { readonly document: { readonly querySelectorAll: (selector: string) => ArrayLike<{ readonly textContent: string | null }> } }

/** `anna admin create NAME --role ROLE --password-stdin`, the password written to its stdin. */
const createAdmin = async (home: string, name: string, password: string, role: "admin" | "user" = "admin") => {
  const child = spawn(process.execPath, [MAIN, "admin", "create", name, "--role", role, "--password-stdin"], {
    env: { ...childEnv(home, {}), ANNA_LOG_LEVEL: "warn", ...NO_DOCKER },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end(`${password}\n`)
  const r = await finish(child)
  assert.strictEqual(r.code, 0, `anna admin create: ${r.stdout}${r.stderr}`)
  return r
}

describe.runIf(runIt)("e2e: the web console in Chromium", () => {
  let home = ""
  let gateway: ChildProcess | undefined
  let gatewayLog = ""
  let base = ""
  let browser: Browser | undefined
  const apiBodies: Array<string> = []

  beforeAll(async () => {
    // The console as `npm run build` makes it (dist/web), fresh from web/.
    execFileSync(process.execPath, ["scripts/build-web.mjs"], { cwd: ROOT, stdio: "inherit" })
    home = suite.keep(newHome())
    const enabled = await anna(home, "channel", "enable", "http")
    assert.strictEqual(enabled.code, 0, enabled.stderr)
    const created = await createAdmin(home, "admin", ADMIN_PASSWORD)
    assert.notInclude(created.stdout + created.stderr, ADMIN_PASSWORD)
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    gateway = start(home, ["gateway", "--port", String(port)], "info", NO_DOCKER)
    gateway.stdout?.on("data", (d: Buffer) => (gatewayLog += d.toString()))
    gateway.stderr?.on("data", (d: Buffer) => (gatewayLog += d.toString()))
    // Ready once it says so; a channel that could not start (or an early exit) fails here, with its log.
    const ready = await waitForLine(gateway, (line) => (line.includes("press Ctrl+C") ? "ready" : line.includes("could not start") ? line : undefined))
    assert.strictEqual(ready, "ready", gatewayLog)
    browser = await launchChromium()
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    if (gateway !== undefined && gateway.exitCode === null) {
      const done = new Promise((r) => gateway?.once("close", r))
      gateway.kill("SIGTERM")
      await done
    }
  })

  const pages: Array<Page> = []
  /** On a failure, what each page showed (test-artifacts/failure-N.png, and its text in CI's log) and the gateway's log. */
  const onFailure = async (e: unknown) => {
    for (const [i, p] of pages.entries()) {
      await p.screenshot({ path: artifact(`failure-${i + 1}.png`), fullPage: true }).catch(() => undefined)
      const shown = await p.locator("body").textContent({ timeout: 2_000 }).then((t) => t ?? "").catch(() => "(unreadable)")
      console.error(`page ${i + 1} at ${p.url()}:\n${shown.slice(0, 3_000)}\npage errors: ${JSON.stringify(pageErrors(p))}`)
    }
    console.error(`gateway log:\n${gatewayLog}`)
    throw e
  }

  /** A fresh browser profile (its own cookies), every API response body kept for the secret scan. */
  const newPage = async (viewport = { width: 1280, height: 860 }): Promise<Page> => {
    if (browser === undefined) throw new Error("no browser")
    const context = await browser.newContext({ viewport, colorScheme: "light" })
    // Generous: the whole suite may be running beside it on two cores.
    context.setDefaultTimeout(60_000)
    const page = await context.newPage()
    pages.push(page)
    page.on("response", (response) => {
      if (!response.url().includes("/api/")) return
      // The chat stream is read by the page itself; the rest is small JSON.
      if ((response.headers()["content-type"] ?? "").includes("text/event-stream")) return
      response.text().then((t) => apiBodies.push(t), () => undefined)
    })
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().includes("status of 40")) errors.push(m.text())
    })
    ;(page as Page & { errors?: Array<string> }).errors = errors
    return page
  }
  const pageErrors = (page: Page) => (page as Page & { errors?: Array<string> }).errors ?? []

  const login = async (page: Page, username: string, password: string) => {
    await page.goto(base)
    await page.getByLabel("Username").fill(username)
    await page.getByLabel("Password").fill(password)
    await page.getByRole("button", { name: "Log in" }).click()
  }

  const nav = (page: Page, name: string) => page.getByRole("navigation", { name: "Console" }).getByRole("link", { name, exact: true }).click()

  it("an operator sets up a provider, an agent only bob may use, and bob chats with it", () => operatorAndUser().catch(onFailure), 360_000)

  it("an admin logs WeChat in by its QR code on the channels page", () => wechatQrLogin().catch(onFailure), 240_000)

  it("a user sends images in the web chat and keeps their rules and diary; the operator reviews, applies and sweeps the playbook", () =>
    learning().catch(onFailure), 360_000)

  const wechatQrLogin = async () => {
    const wx = await startFakeWechat({ qrHoldMs: 300, token: "wx-bot-token-secret-4242" })
    try {
      const admin = await newPage()
      await login(admin, "admin", ADMIN_PASSWORD)
      await admin.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()
      await nav(admin, "Channels")
      const card = admin.locator("section.card").filter({ has: admin.getByRole("heading", { level: 2, name: "wechat" }) })
      await card.waitFor()
      // Point the channel at the fake iLink server through its settings form.
      await card.locator("summary").filter({ hasText: "Settings" }).click()
      for (const [key, value] of [["base_url", wx.baseUrl], ["cdn_base_url", wx.cdnBaseUrl]] as const) {
        await card.getByLabel("Setting").fill(key)
        await card.getByLabel("New value").fill(value)
        await card.getByRole("button", { name: "Save" }).click()
        await card.getByRole("status").filter({ hasText: `${key} saved.` }).waitFor()
      }
      await card.getByRole("button", { name: "Log in with a QR code" }).click()
      await card.getByText("Scan the code with WeChat on your phone.").waitFor()
      const qr = card.getByLabel("WeChat login QR code")
      await qr.waitFor()
      // The code is drawn: opaque dark modules on a light ground, not a blank canvas.
      await admin.waitForFunction(
        (el) => {
          const c = el as unknown as { getContext: (k: string) => { getImageData: (x: number, y: number, w: number, h: number) => { data: ArrayLike<number> } } | null; width: number; height: number }
          const data = c.getContext("2d")?.getImageData(0, 0, c.width, c.height).data
          if (data === undefined) return false
          let dark = 0
          let light = 0
          for (let i = 0; i < data.length; i += 4) {
            if ((data[i + 3] ?? 0) < 200) continue
            if ((data[i] ?? 0) < 80) dark++
            else if ((data[i] ?? 0) > 200) light++
          }
          return dark > 1000 && light > 1000
        },
        await qr.elementHandle()
      )
      assert.strictEqual(await card.getByRole("link", { name: "Open the login link on the phone" }).getAttribute("href"), wx.qrs.at(-1)?.url)
      await admin.screenshot({ path: artifact("wechat-qr.png"), fullPage: true })
      wx.setQr("scaned")
      await card.getByText("Scanned: confirm on your phone.").waitFor()
      wx.setQr("confirmed")
      await card.getByText(/^Logged in/).waitFor()
      // The bot token was saved, and is shown masked only.
      await card.locator("dt").filter({ hasText: /^token$/ }).waitFor()
      assert.notInclude(await admin.content(), "wx-bot-token-secret-4242")
      assert.deepStrictEqual(pageErrors(admin), [])
    } finally {
      await wx.close()
    }
  }

  /**
   * Carol (a user) on agent seer: images attached, removed, refused and pasted in the web chat and sent
   * to the model; reflection then writes her diary entry and a rule of hers, with hostile markup in
   * both (shown as text); she removes her rule, never another's. The admin reviews and applies an
   * inversion proposal, sweeps, gives feedback and promotes, and reads her entry.
   */
  const learning = async () => {
    const cli = async (...args: Array<string>) => {
      const r = await anna(home, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stdout}${r.stderr}`)
      return r.stdout
    }
    await cli("provider", "add", "pbfake", "--type", "openai", "--base-url", suite.fake.openAiUrl, "--api-key", "sk-pb-key", "--default-model", "fake-large")
    await cli("agent", "set", "seer", "--model", "pbfake/fake-large", "--tools", "none")
    await cli("user", "add", "dave")
    await createAdmin(home, "carol", CAROL_PASSWORD, "user")
    type Added = { readonly id: string }
    const addRule = (...args: Array<string>) => annaJson<Added>(home, "playbook", "add", ...args).then((r) => r.id)
    const shared = await addRule("--text", "Describe images top to bottom", "--tags", "images", "--agent", "seer")
    const daves = await addRule("--text", "Dave wants every answer in French", "--tags", "language", "--agent", "seer", "--user", "dave")
    const failing = await addRule("--text", "Guess the colours without looking", "--tags", "images", "--agent", "seer")
    for (let i = 0; i < 3; i++) await cli("playbook", "feedback", failing, "bad", "--agent", "seer")
    const globalXss = await addRule("--text", `Global <img src=x onerror="window.__pwned='rule'"> rule`, "--tags", "images")

    // ── Carol's web chat: images chosen, removed, refused, pasted; then sent.
    const carol = await newPage()
    await login(carol, "carol", CAROL_PASSWORD)
    await carol.getByRole("heading", { level: 1, name: "Chat" }).waitFor()
    const links = await carol.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts()
    assert.includeMembers(links, ["My rules", "My diary"])
    assert.notInclude(links, "Playbook")
    await carol.getByLabel("Agent", { exact: true }).selectOption("seer")
    const attach = carol.getByLabel("Attach images")
    const waiting = carol.getByRole("list", { name: "Images to send" })
    await attach.setInputFiles({ name: "pixel.png", mimeType: "image/png", buffer: Buffer.from(PNG, "base64") })
    await waiting.getByRole("img", { name: "pixel.png" }).waitFor()
    await carol.getByRole("button", { name: "Remove image pixel.png" }).click()
    await waiting.waitFor({ state: "detached" })
    // Checked in the browser: a file that only says it is an image, and one too large to send.
    await attach.setInputFiles({ name: "notes.png", mimeType: "image/png", buffer: Buffer.from("just words, no picture") })
    await carol.getByRole("alert").filter({ hasText: "notes.png is not a PNG, JPEG, GIF or WebP image" }).waitFor()
    const huge = Buffer.concat([Buffer.from(PNG, "base64"), Buffer.alloc(7 * 1048576)])
    await attach.setInputFiles({ name: "huge.png", mimeType: "image/png", buffer: huge })
    await carol.getByRole("alert").filter({ hasText: "huge.png is too large" }).waitFor()
    assert.strictEqual(await waiting.count(), 0, "nothing refused is waiting to be sent")
    await attach.setInputFiles({ name: "pixel.png", mimeType: "image/png", buffer: Buffer.from(PNG, "base64") })
    await waiting.getByRole("img", { name: "pixel.png" }).waitFor()
    // A picture pasted into the message box (as the clipboard gives one: a file, no text).
    await carol.evaluate(`(() => {
      const bytes = Uint8Array.from(atob(${JSON.stringify(GIF)}), (c) => c.charCodeAt(0))
      const data = new DataTransfer()
      data.items.add(new File([bytes], "clip.gif", { type: "image/gif" }))
      document.getElementById("chat-message").dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }))
    })()`)
    await waiting.getByRole("img", { name: "clip.gif" }).waitFor()
    assert.strictEqual(await waiting.getByRole("img").count(), 2)
    await carol.screenshot({ path: artifact("webchat-images.png"), fullPage: false })
    suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "A white pixel and a small GIF." }] })
    const message = carol.getByLabel("Message")
    await message.fill("what is in these?")
    await message.press("Enter")
    await carol.locator(".bubble.assistant:not(.streaming)").filter({ hasText: "A white pixel and a small GIF." }).waitFor()
    assert.strictEqual(await carol.locator(".bubble.user").last().getByRole("img").count(), 2)
    assert.strictEqual(await waiting.count(), 0, "sent, so no longer waiting")
    const sent = suite.fake.requests.at(-1)?.body as { messages: ReadonlyArray<{ role: string; content: unknown }> }
    assert.deepStrictEqual(sent.messages.at(-1), {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "image_url", image_url: { url: `data:image/gif;base64,${GIF}` } },
        { type: "text", text: "what is in these?" }
      ]
    })
    // Back later: the images are in the conversation, from memory.
    await carol.reload()
    await carol.getByLabel("Agent", { exact: true }).selectOption("seer")
    await carol.locator(".bubble.user").filter({ hasText: "what is in these?" }).getByRole("img").nth(1).waitFor()

    // ── Reflection on that burst: her diary entry and a rule of hers, with markup a model might write.
    suite.fake.script({
      kind: "reply",
      parts: [{
        type: "text",
        text: JSON.stringify({
          accomplishments: [`described <img src=x onerror="window.__pwned='diary'"> two images`],
          decisions: [],
          challenges: ["<script>window.__pwned='script'</script> nothing hard"],
          key_learnings: ["carol sends screenshots"],
          tags: ["images"],
          status: "success",
          quality_score: 0.9,
          rules: [{ text: "<b onmouseover=\"window.__pwned='rule'\">Describe</b> each image in turn", tags: ["images"] }]
        })
      }]
    })
    const reflected = await annaJson<{ reflected: boolean; entry: { id: string } }>(home, "diary", "reflect", "seer:web:carol:default")
    assert.isTrue(reflected.reflected)

    await nav(carol, "My diary")
    await carol.getByRole("heading", { level: 1, name: "My diary" }).waitFor()
    await carol.getByRole("link", { name: `described <img src=x onerror="window.__pwned='diary'"> two images` }).click()
    await carol.getByRole("heading", { level: 1, name: "Diary entry" }).waitFor()
    await carol.getByRole("region", { name: "Challenges" }).getByText("<script>window.__pwned='script'</script> nothing hard").waitFor()
    await carol.getByRole("region", { name: "Key learnings" }).getByText("carol sends screenshots").waitFor()

    await nav(carol, "My rules")
    await carol.getByRole("heading", { level: 1, name: "My rules" }).waitFor()
    const mine = carol.getByRole("row").filter({ hasText: "each image in turn" })
    await mine.waitFor()
    assert.include((await mine.textContent()) ?? "", "<b onmouseover=", "her rule's text, as text")
    assert.include((await mine.textContent()) ?? "", "you")
    await carol.getByRole("row").filter({ hasText: "Describe images top to bottom" }).waitFor()
    await carol.locator(`tr[data-rule="${globalXss}"]`).filter({ hasText: `Global <img src=x onerror="window.__pwned='rule'"> rule` }).waitFor()
    assert.strictEqual(await carol.getByRole("row").filter({ hasText: "Dave wants every answer in French" }).count(), 0, "another user's rule is not hers to see")
    assert.strictEqual(await carol.getByRole("button", { name: `Remove rule ${shared}` }).count(), 0, "a rule for every user is the operator's")
    assert.strictEqual(await carol.getByRole("button", { name: `Rule ${shared} helped` }).count(), 0)
    await mine.getByRole("button", { name: /^Remove rule / }).click()
    await carol.getByRole("status").filter({ hasText: /^Rule .* removed\.$/ }).waitFor()
    await mine.waitFor({ state: "detached" })
    // Nothing anyone wrote ran as markup.
    assert.isUndefined(await carol.evaluate("window.__pwned"))
    assert.strictEqual(await carol.locator("main img[src='x'], main b[onmouseover], main script").count(), 0)

    // ── The operator: review and apply the inversion, sweep, feedback, promote; carol's entry.
    const admin = await newPage()
    await login(admin, "admin", ADMIN_PASSWORD)
    await admin.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()
    await nav(admin, "Playbook")
    await admin.getByRole("heading", { level: 1, name: "Playbook" }).waitFor()
    await admin.getByRole("row").filter({ hasText: `Global <img src=x onerror="window.__pwned='rule'"> rule` }).waitFor()
    await admin.getByRole("combobox", { name: "Playbook" }).selectOption("seer")
    await admin.getByRole("button", { name: "Filter" }).click()
    await admin.getByRole("row").filter({ hasText: "Dave wants every answer in French" }).waitFor()
    const proposals = admin.getByRole("region", { name: "Inversion proposals" })
    await proposals.getByLabel(`Invert ${failing} (3 failures, 0 successes)`).check()
    await proposals.getByText("AVOID: Guess the colours without looking -- this pattern has caused repeated issues (3 failures vs 0 successes).").waitFor()
    await admin.screenshot({ path: artifact("playbook.png"), fullPage: true })
    await proposals.getByRole("button", { name: "Apply chosen" }).click()
    await proposals.getByRole("status").filter({ hasText: "Applied 1 proposal." }).waitFor()
    await proposals.getByText("No proposal.").waitFor()
    const avoid = admin.getByRole("row").filter({ hasText: "AVOID: Guess the colours without looking" })
    await avoid.waitFor()
    assert.include((await avoid.textContent()) ?? "", "avoid")
    await proposals.getByRole("button", { name: "Sweep agent seer's playbook" }).click()
    await proposals.getByRole("status").filter({ hasText: /^Swept agent seer's playbook: \d+ promoted/ }).filter({ hasText: failing }).waitFor()
    await admin.getByRole("button", { name: `Rule ${shared} helped` }).click()
    await admin.getByRole("status").filter({ hasText: `Rule ${shared}: good recorded for everyone it is for.` }).waitFor()
    await admin.getByRole("row").filter({ hasText: "Describe images top to bottom" }).filter({ hasText: "1 / 0" }).waitFor()
    await admin.getByRole("button", { name: `Promote rule ${daves} to every user` }).click()
    await admin.getByRole("status").filter({ hasText: `Rule ${daves} now applies to every user of seer.` }).waitFor()
    await admin.getByRole("row").filter({ hasText: "Dave wants every answer in French" }).filter({ hasText: "every user" }).waitFor()
    // One rule in full: its votes, the file it lives in.
    await admin.getByRole("link", { name: shared, exact: true }).click()
    await admin.getByRole("heading", { level: 1, name: `Rule ${shared}` }).waitFor()
    await admin.getByText("none yet").waitFor()
    await admin.getByText(/workspaces\/seer\/playbook\.yaml$/).waitFor()
    await admin.screenshot({ path: artifact("playbook-rule.png"), fullPage: true })

    await nav(admin, "Diary")
    await admin.getByRole("heading", { level: 1, name: "Diary" }).waitFor()
    await admin.getByLabel("User").fill("carol")
    await admin.getByRole("button", { name: "Filter" }).click()
    const entryRow = admin.getByRole("row").filter({ hasText: "carol" }).filter({ hasText: "success" })
    await entryRow.getByRole("link", { name: /two images/ }).click()
    await admin.getByRole("heading", { level: 1, name: "Diary entry" }).waitFor()
    await admin.getByText(reflected.entry.id).waitFor()
    assert.isUndefined(await admin.evaluate("window.__pwned"))
    assert.strictEqual(await admin.locator("main img[src='x'], main b[onmouseover], main script").count(), 0)
    assert.deepStrictEqual([...pageErrors(carol), ...pageErrors(admin)], [])
  }

  const operatorAndUser = async () => {
    // ── The operator's first login: a strict CSP, no inline script.
    const admin = await newPage()
    const first = await admin.goto(base)
    const csp = first?.headers()["content-security-policy"] ?? ""
    assert.include(csp, "default-src 'self'", "the console is served with a strict CSP")
    await login(admin, "admin", "wrong-password")
    await admin.getByRole("alert").filter({ hasText: /wrong username or password/i }).waitFor()
    await admin.getByLabel("Password").fill(ADMIN_PASSWORD)
    await admin.getByRole("button", { name: "Log in" }).click()
    await admin.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()
    // A first login on an empty gateway says where to begin.
    await admin.getByRole("region", { name: "Getting started" }).getByRole("link", { name: "Add a provider" }).waitFor()

    // ── A provider: the fake LLM. The key goes in once and only comes back masked.
    await nav(admin, "Providers")
    await admin.getByRole("heading", { level: 1, name: "Providers" }).waitFor()
    await admin.getByLabel("Id", { exact: true }).fill("fake")
    await admin.getByLabel("Type").selectOption("openai")
    await admin.getByLabel("Base URL").fill(suite.fake.openAiUrl)
    await admin.getByLabel("API key").fill(PROVIDER_KEY)
    await admin.getByLabel("Default model").fill("fake-large")
    await admin.getByRole("button", { name: "Add provider" }).click()
    await admin.getByRole("status").filter({ hasText: "Provider fake added." }).waitFor()
    const row = admin.getByRole("row").filter({ has: admin.getByRole("rowheader", { name: "fake" }) })
    await row.waitFor()
    assert.include((await row.textContent()) ?? "", "fake-large")
    assert.strictEqual(await admin.getByLabel("API key").inputValue(), "", "the key field is emptied")
    assert.notInclude(await admin.content(), PROVIDER_KEY)
    // The key rotated in place: shown masked, the field emptied, the form gone.
    await admin.getByRole("button", { name: "New key for provider fake" }).click()
    await admin.getByLabel("New API key").fill(ROTATED_KEY)
    await admin.getByRole("button", { name: "Save key" }).click()
    await admin.getByRole("status").filter({ hasText: "Provider fake: new key saved." }).waitFor()
    await row.filter({ hasText: "sk-…c0d2" }).waitFor()
    assert.strictEqual(await admin.getByLabel("New API key").count(), 0)
    assert.notInclude(await admin.content(), ROTATED_KEY)
    // A price for its model (USD per million tokens; dear, so a few tokens show as money).
    await admin.getByRole("button", { name: "Prices of provider fake" }).click()
    const prices = admin.getByRole("region", { name: "Prices of fake" })
    await prices.getByLabel("Model", { exact: true }).fill("fake-large")
    await prices.getByLabel("Input, USD per 1M tokens").fill("1000")
    await prices.getByLabel("Output, USD per 1M tokens").fill("2000")
    await prices.getByRole("button", { name: "Save price" }).click()
    await admin.getByRole("status").filter({ hasText: "Price of fake/fake-large saved." }).waitFor()
    await prices.getByRole("row").filter({ has: admin.getByRole("rowheader", { name: "fake-large" }) }).filter({ hasText: "$1000" }).waitFor()
    await prices.getByRole("button", { name: "Close" }).click()

    // ── A user with a console password.
    await nav(admin, "Users")
    await admin.getByLabel("Id", { exact: true }).fill("bob")
    await admin.getByLabel("Name", { exact: true }).fill("Bob")
    await admin.getByLabel("Password").fill(BOB_PASSWORD)
    await admin.getByRole("button", { name: "Add user" }).click()
    await admin.getByRole("status").filter({ hasText: "User bob added." }).waitFor()
    await admin.getByRole("link", { name: "Bob (bob)" }).waitFor()

    // ── An agent on the fake model, open to bob only.
    await nav(admin, "Agents")
    await admin.getByRole("link", { name: "New agent" }).click()
    await admin.getByRole("heading", { level: 1, name: "New agent" }).waitFor()
    await admin.getByLabel("Id", { exact: true }).fill("helper")
    await admin.getByLabel("Name", { exact: true }).fill("Helper")
    await admin.getByLabel("Model", { exact: true }).fill("fake/fake-large")
    await admin.getByLabel("System prompt").fill("You are a helpful test agent.")
    await admin.getByLabel("Tools").fill("memory")
    await admin.getByLabel("Only these users").check()
    await admin.getByRole("checkbox", { name: "Bob (bob)" }).check()
    await admin.getByText("users:bob", { exact: true }).waitFor()
    await admin.getByRole("button", { name: "Create agent" }).click()
    await admin.getByRole("heading", { level: 1, name: "Agent Helper" }).waitFor()
    // The agent's page, loaded back from the server, shows what was saved.
    assert.strictEqual(await admin.getByLabel("Model", { exact: true }).inputValue(), "fake/fake-large")
    assert.strictEqual(await admin.getByLabel("Tools").inputValue(), "memory")
    assert.strictEqual(await admin.getByLabel("System prompt").inputValue(), "You are a helpful test agent.")
    assert.isTrue(await admin.getByRole("checkbox", { name: "Bob (bob)" }).isChecked())
    assert.isFalse(await admin.getByRole("checkbox", { name: "admin" }).isChecked())
    await nav(admin, "Agents")
    const agentRow = admin.getByRole("row").filter({ has: admin.getByRole("link", { name: "Helper (helper)" }) })
    await agentRow.waitFor()
    const agentText = (await agentRow.textContent()) ?? ""
    assert.include(agentText, "users bob")
    assert.include(agentText, "enabled")

    // ── Bob, at phone width: only his pages; the web chat streams the answer.
    const bob = await newPage({ width: 390, height: 844 })
    // From the keyboard alone: type, Tab to the password, Enter.
    await bob.goto(base)
    await bob.getByLabel("Username").focus()
    await bob.keyboard.type("bob")
    await bob.keyboard.press("Tab")
    await bob.keyboard.type(BOB_PASSWORD)
    await bob.keyboard.press("Enter")
    await bob.getByRole("heading", { level: 1, name: "Chat" }).waitFor()
    await bob.getByRole("button", { name: "Menu" }).click()
    const links = await bob.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts()
    assert.deepStrictEqual(links, ["Chat", "Sessions", "Usage", "My rules", "My diary", "Schedules", "Skills", "API tokens", "Profile"])
    await bob.getByRole("button", { name: "Menu" }).click()
    assert.strictEqual(await bob.getByLabel("Agent", { exact: true }).inputValue(), "helper")

    // A reply that stalls half-way: its first words show while the turn still runs, then Stop ends it.
    suite.fake.script({ kind: "disconnect", parts: [{ type: "text", text: "Once upon a time, a gateway streamed its answers word by word." }], afterEvents: 4, stall: true })
    const message = bob.getByLabel("Message")
    await message.fill("tell me a story")
    await message.press("Enter")
    const answer = bob.locator(".bubble.assistant.streaming")
    await answer.filter({ hasText: "Once" }).waitFor()
    assert.notInclude((await answer.textContent()) ?? "", "word by word", "only part of the answer has arrived")
    await bob.getByRole("button", { name: "Stop" }).click()
    await bob.getByRole("button", { name: "Send" }).waitFor()
    await bob.locator(".chat-log .bubble:not(.user)").filter({ hasText: /stopped/i }).waitFor()
    await suite.fake.when(() => suite.fake.requests.at(-1)?.aborted === true, { what: "the stalled model call aborted", timeoutMs: 30_000 })

    // A whole answer after a tool call (the chat shows only the answer), streamed in small pieces.
    suite.fake.script(
      { kind: "reply", parts: [{ type: "tool_call", id: "call_status", name: "memory", input: { action: "status" } }] },
      { kind: "reply", parts: [{ type: "text", text: "Hello **Bob**, the web chat works and streams.\n\n- answers in Markdown\n- `code` too" }], chunk: 3 }
    )
    await message.fill("hello there")
    await message.press("Enter")
    const whole = bob.locator(".bubble.assistant:not(.streaming)").filter({ hasText: "Hello Bob, the web chat works and streams." })
    await whole.waitFor()
    // Markdown shown as elements, not as asterisks.
    assert.strictEqual((await whole.locator("strong").textContent()) ?? "", "Bob")
    assert.deepStrictEqual(await whole.locator("li").allTextContents(), ["answers in Markdown", "code too"])
    assert.notInclude((await whole.textContent()) ?? "", "**")
    const sent = suite.fake.requests.at(-1)?.body as {
      messages?: ReadonlyArray<{ role: string; content?: unknown }>
      tools?: ReadonlyArray<{ function: { name: string } }>
    }
    assert.strictEqual(suite.fake.requests.at(-1)?.headers["authorization"], `Bearer ${ROTATED_KEY}`, "the rotated key is the one used")
    assert.include(JSON.stringify(sent.messages), "You are a helpful test agent.", "the agent's system prompt went to the model")
    assert.include(JSON.stringify(sent.messages), "hello there")
    assert.deepStrictEqual((sent.tools ?? []).map((t) => t.function.name), ["memory"], "the agent's tools as set in the console")
    assert.strictEqual(await bob.getByText(/Docker is not reachable/).count(), 0, "an agent without sandbox tools needs no Docker")
    // Slash commands work as on every channel.
    await message.fill("/whoami")
    await message.press("Enter")
    await bob.locator(".chat-log .bubble:not(.user)").filter({ hasText: "helper" }).last().waitFor()
    await bob.screenshot({ path: artifact("webchat.png"), fullPage: false })

    // ── The conversation in bob's session browser.
    await bob.getByRole("button", { name: "Menu" }).click()
    await nav(bob, "Sessions")
    const sessionLink = bob.getByRole("row").filter({ hasText: "web" }).filter({ hasText: "helper" }).getByRole("link")
    await sessionLink.first().click()
    await bob.getByRole("heading", { level: 1, name: "Session" }).waitFor()
    await bob.locator(".msg.user").filter({ hasText: "hello there" }).waitFor()
    await bob.locator(".msg.assistant").filter({ hasText: "Hello Bob, the web chat works and streams." }).waitFor()
    // The tool call and its result are there, folded: a click opens them.
    const call = bob.locator("details.tool").filter({ hasText: "Tool call: memory" })
    await call.waitFor()
    assert.isFalse(await call.evaluate((d) => (d as unknown as { open: boolean }).open), "folded at first")
    assert.isFalse(await call.locator("pre").isVisible())
    await call.locator("summary").click()
    assert.include((await call.locator("pre").textContent()) ?? "", '"status"')
    await bob.locator("details.tool").filter({ hasText: "Tool result" }).first().waitFor()
    // …and found by searching memory, the match highlighted.
    await bob.getByRole("button", { name: "Menu" }).click()
    await nav(bob, "Sessions")
    await bob.getByRole("link", { name: "Search memory" }).click()
    await bob.getByLabel("Search", { exact: true }).fill("streams")
    await bob.getByRole("button", { name: "Search", exact: true }).click()
    await bob.locator(".hits mark").first().waitFor()
    assert.match((await bob.locator(".hits mark").first().textContent()) ?? "", /stream/i)

    // ── An API token: shown once when issued, then only its id.
    await bob.getByRole("button", { name: "Menu" }).click()
    await nav(bob, "API tokens")
    await bob.getByLabel("Label").fill("my script")
    await bob.getByRole("button", { name: "Issue token" }).click()
    const shown = bob.locator("output.secret-once")
    await shown.waitFor()
    const token = ((await shown.textContent()) ?? "").trim()
    assert.isAbove(token.length, 20)
    await bob.getByRole("row").filter({ hasText: "my script" }).waitFor()
    await bob.getByRole("button", { name: "Done, hide it" }).click()
    await shown.waitFor({ state: "detached" })
    assert.notInclude(await bob.content(), token, "the token is gone from the page")
    // It works as a bearer token on the API, as bob.
    const me = await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } })
    assert.strictEqual(me.status, 200)
    assert.strictEqual(((await me.json()) as { user: string }).user, "bob")
    // That token mints another (a script making its own): the page shows who minted whom, and
    // revoking the first offers to revoke the one it minted too.
    const minted = await fetch(`${base}/api/tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ label: "minted by script" })
    })
    assert.strictEqual(minted.status, 200)
    const child = ((await minted.json()) as { token: string }).token
    await bob.reload()
    const parentRow = bob.getByRole("row").filter({ hasText: "my script" })
    const childRow = bob.getByRole("row").filter({ hasText: "minted by script" })
    await childRow.waitFor()
    const parentId = ((await parentRow.getByRole("rowheader").textContent()) ?? "").trim()
    assert.include((await childRow.textContent()) ?? "", parentId, "the minted token names its minter")
    await parentRow.getByRole("button", { name: "Revoke token my script" }).click()
    const confirmRevoke = bob.getByRole("alertdialog", { name: "Revoke token my script?" })
    await confirmRevoke.getByLabel("Also revoke the token it minted (directly or through others)").check()
    await confirmRevoke.getByRole("button", { name: "Revoke" }).click()
    await bob.getByText("Token revoked, with the token it minted.").waitFor()
    await childRow.waitFor({ state: "detached" })
    await parentRow.waitFor({ state: "detached" })
    for (const gone of [token, child]) {
      assert.strictEqual((await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${gone}` } })).status, 401)
    }

    // ── Bob's usage: the chart shows his tokens.
    await bob.getByRole("button", { name: "Menu" }).click()
    await nav(bob, "Usage")
    await bob.getByRole("heading", { level: 1, name: "Usage" }).waitFor()
    const chart = bob.getByRole("img", { name: /Tokens by day/ })
    await chart.waitFor()
    assert.notMatch((await chart.getAttribute("aria-label")) ?? "", /input: 0\b/, "the chart counts bob's input tokens")
    assert.isAbove(await bob.locator("#usage-chart .series polyline").count(), 0)
    // His calls' cost, in money, from the price the operator set.
    assert.match((await bob.locator("#usage-cost .stat-value").textContent()) ?? "", /^\$\d+\.\d{2,4}$/)
    await bob.screenshot({ path: artifact("usage-phone.png"), fullPage: true })
    // Bob cannot open the admin pages, even by address.
    await bob.goto(`${base}/#/providers`)
    await bob.getByRole("heading", { level: 1, name: "Chat" }).waitFor()

    // ── The admin's dashboard: the turns and bob's spend.
    await nav(admin, "Dashboard")
    await admin.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()
    await admin.getByRole("img", { name: /^Turns/ }).waitFor()
    await admin.locator(".bars li").filter({ hasText: "bob" }).filter({ hasText: "$" }).first().waitFor()
    await admin.screenshot({ path: artifact("console.png"), fullPage: false })

    // Helper is closed to the admin: the web chat offers no agent at all.
    await nav(admin, "Chat")
    await admin.getByText("No agent is open to you yet.").waitFor()
    // Opened to everyone, it is offered at once, with the admin's own (empty) history, not bob's.
    await nav(admin, "Agents")
    await admin.getByRole("link", { name: "Helper (helper)" }).click()
    await admin.getByLabel("Everyone").check()
    await admin.getByRole("button", { name: "Save" }).click()
    await admin.getByRole("status").filter({ hasText: "Agent helper saved." }).waitFor()
    const history = admin.waitForResponse((r) => r.url().includes("/api/sessions?") && r.url().includes("platform=web"))
    await nav(admin, "Chat")
    // The page switched first: until then the agent's page, titled "Agent helper", is what is shown.
    await admin.getByRole("heading", { level: 1, name: "Chat" }).waitFor()
    assert.strictEqual(await admin.getByLabel("Agent", { exact: true }).inputValue(), "helper")
    assert.include((await history).url(), "user=admin")
    await admin.getByText("Say hello. Type / for commands.").waitFor()
    assert.strictEqual(await admin.locator(".chat-log .bubble").count(), 0, "bob's conversation is not the admin's")

    // Every admin page loads its data without an error (each saved as test-artifacts/page-*.png).
    for (const [link, heading] of [
      ["Dashboard", "Dashboard"], ["Sessions", "Sessions"], ["Usage", "Usage"], ["Playbook", "Playbook"], ["Diary", "Diary"],
      ["Schedules", "Schedules"], ["Skills", "Skills"], ["Providers", "Providers"], ["Agents", "Agents"], ["MCP servers", "MCP servers"],
      ["Channels", "Channels"], ["Users", "Users"], ["Bindings", "Bindings"], ["Plugins", "Plugins"], ["Settings", "Settings"],
      ["API tokens", "API tokens"], ["Profile", "Profile"]
    ] as const) {
      await nav(admin, link)
      await admin.getByRole("heading", { level: 1, name: heading }).waitFor()
      // Runs in the page (its source is sent there): nothing from this file can be named in it.
      await admin.waitForFunction(() =>
        !Array.from((globalThis as unknown as PageGlobal).document.querySelectorAll("main [role=status]")).some((e) => e.textContent?.startsWith("Loading"))
      )
      assert.strictEqual(await admin.locator(".notice.error").count(), 0, `${link}: ${await admin.locator(".notice.error").allTextContents()}`)
      await admin.screenshot({ path: artifact(`page-${link.toLowerCase().replace(" ", "-")}.png`), fullPage: true })
    }
    // The conversation as the admin sees it: the agent's session of bob, with its summaries tab.
    await nav(admin, "Sessions")
    await admin.getByRole("link", { name: "helper:web:bob:default" }).click()
    await admin.locator(".msg.assistant").filter({ hasText: "Hello Bob" }).waitFor()
    // The views are tabs for the keyboard too: the arrow key moves to Summaries.
    await admin.getByRole("tab", { name: "Conversation" }).focus()
    await admin.keyboard.press("ArrowRight")
    assert.strictEqual(await admin.getByRole("tab", { name: "Summaries" }).getAttribute("aria-selected"), "true")
    await admin.getByText(/No summary yet|in context/).first().waitFor()

    for (const body of apiBodies) {
      for (const secret of [PROVIDER_KEY, ROTATED_KEY, ADMIN_PASSWORD, BOB_PASSWORD]) assert.notInclude(body, secret, "an API response carried a secret")
    }
    assert.isAbove(apiBodies.length, 10)
    assert.deepStrictEqual([...pageErrors(admin), ...pageErrors(bob)], [])
    assert.notInclude(gatewayLog, PROVIDER_KEY)
    assert.notInclude(gatewayLog, ROTATED_KEY)
  }
})
