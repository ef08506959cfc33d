/**
 * The console's Schedules, Skills and MCP servers pages (issue 24) in a real headless Chromium,
 * against a real gateway process (dist/main.js) on a fresh ANNA_HOME and the fake LLM.
 *
 * The admin adds jobs (every, cron with a time zone; a bad cron refused with its reason), runs one
 * now and reads the agent's reply in its history, removes one; installs skills from folders on the
 * host (globally and for an agent closed to the user), ranks and removes them; adds a remote MCP
 * server (server-everything over Streamable HTTP, with a secret header) and a stdio one (run in the
 * agent's sandbox when Docker and a Node image are here, else reported as not answering, with why),
 * sees whether each answers and its tools, tests and removes one. A user then has "my schedules" —
 * their own jobs only, on the agents open to them, within the chat tool's limits — and reads the
 * skills of the agents open to them, without the admin's forms; the MCP page is not theirs.
 *
 * Every text a user, the model or a server wrote (prompts, replies, skill descriptions) carries HTML
 * that would run if it were ever inserted as markup: it must show as text, and nothing may run.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, finish, MAIN, newHome, start, waitForLine } from "../support/cli.ts"
import { removeTemp } from "../support/cleanup.ts"
import { artifact, browserRequired, browserUnavailable, launchChromium } from "../support/browser.ts"
import { TEST_IMAGE } from "../support/docker.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"
import { installInto, nodeImageReady, startEverythingHttp } from "../support/mcpServers.ts"
import { freePort } from "../support/ports.ts"
import { childEnv } from "../support/spawnAnna.ts"

const ROOT = resolve(import.meta.dirname, "../..")
const ADMIN_PASSWORD = "admin-password-1"
const CAROL_PASSWORD = "carol-password-22"
const HEADER_SECRET = "Bearer mcp-browser-secret-51ac"
/** Markup that would run (and set a global) if a page ever inserted it as HTML. */
const XSS = `<img src=x onerror="globalThis.__annaXss=1"><script>globalThis.__annaXss=2</script>`

const unavailable = browserUnavailable()
const runIt = unavailable === undefined || browserRequired()
if (!runIt) console.warn(`e2e console automation: skipped, ${unavailable} (set ANNA_REQUIRE_BROWSER=1 to fail instead)`)

const suite = fakeLlmSuite({ reset: false })

/** `anna admin create NAME --role ROLE --password-stdin`, the password written to its stdin. */
const createAccount = async (home: string, name: string, role: "admin" | "user", password: string) => {
  const child = spawn(process.execPath, [MAIN, "admin", "create", name, "--role", role, "--password-stdin"], {
    env: { ...childEnv(home, {}), ANNA_LOG_LEVEL: "warn" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end(`${password}\n`)
  const r = await finish(child)
  assert.strictEqual(r.code, 0, `anna admin create ${name}: ${r.stdout}${r.stderr}`)
}

describe.runIf(runIt)("e2e: schedules, skills and MCP servers in the console", () => {
  let home = ""
  let gateway: ChildProcess | undefined
  let gatewayLog = ""
  let base = ""
  let browser: Browser | undefined
  let everything: Awaited<ReturnType<typeof startEverythingHttp>> | undefined
  const skillsDir = () => join(home, "skill-sources")
  const apiBodies: Array<string> = []

  beforeAll(async () => {
    // The console as `npm run build` makes it (dist/web), fresh from web/.
    execFileSync(process.execPath, ["scripts/build-web.mjs"], { cwd: ROOT, stdio: "inherit" })
    home = newHome()
    const env = { OPENAI_BASE_URL: suite.fake.openAiUrl, OPENAI_API_KEY: "sk-automation" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
    }
    // A provider and the default agent (open to everyone), and an agent only the admin may use.
    await cli("onboard", "--from-env")
    await cli("channel", "enable", "http")
    await createAccount(home, "admin", "admin", ADMIN_PASSWORD)
    await createAccount(home, "carol", "user", CAROL_PASSWORD)
    await cli("agent", "set", "ops", "--model", "openai/fake-large", "--access", "users:admin")
    if (nodeImageReady) {
      // The stdio server runs in the default agent's sandbox: an image with Node, the server in its shared workspace.
      await cli("agent", "set", "default", "--image", TEST_IMAGE)
      const shared = join(home, "workspaces", "default", "shared")
      mkdirSync(shared, { recursive: true })
      await installInto(shared, "everything")
    }
    // Skills to install, from folders on the gateway's host; their descriptions carry markup.
    for (const [name, description] of [["pdf-forms", `Fill in PDF forms. ${XSS}`], ["ops-runbook", "The runbook of the operators."]] as const) {
      mkdirSync(join(skillsDir(), name), { recursive: true })
      writeFileSync(join(skillsDir(), name, "SKILL.md"), `---\nname: ${name}\ndescription: '${description}'\n---\nInstructions of ${name}.\n`)
    }
    // A scheduled run asks the model: its reply carries markup too.
    suite.fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: `Build is green. ${XSS} **done**` }] }))
    everything = await startEverythingHttp()
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    gateway = start(home, ["gateway", "--port", String(port)], "info", env)
    gateway.stdout?.on("data", (d: Buffer) => (gatewayLog += d.toString()))
    gateway.stderr?.on("data", (d: Buffer) => (gatewayLog += d.toString()))
    const ready = await waitForLine(gateway, (line) => (line.includes("press Ctrl+C") ? "ready" : line.includes("could not start") ? line : undefined))
    assert.strictEqual(ready, "ready", gatewayLog)
    browser = await launchChromium()
  }, 240_000)

  afterAll(async () => {
    await browser?.close()
    await everything?.stop()
    if (gateway !== undefined && gateway.exitCode === null) {
      const done = new Promise((r) => gateway?.once("close", r))
      gateway.kill("SIGTERM")
      await done
    }
    // Its workspaces may be filesystems of their own (mounted when the sandbox ran): unmounted first.
    await removeTemp(home)
  })

  const pages: Array<Page> = []
  const onFailure = async (e: unknown) => {
    for (const [i, p] of pages.entries()) await p.screenshot({ path: artifact(`automation-failure-${i + 1}.png`), fullPage: true }).catch(() => undefined)
    console.error(`gateway log:\n${gatewayLog}`)
    throw e
  }

  const newPage = async (viewport = { width: 1280, height: 900 }): Promise<Page> => {
    if (browser === undefined) throw new Error("no browser")
    const context = await browser.newContext({ viewport, colorScheme: "light" })
    context.setDefaultTimeout(60_000)
    const page = await context.newPage()
    pages.push(page)
    page.on("response", (response) => {
      if (response.url().includes("/api/")) response.text().then((t) => apiBodies.push(t), () => undefined)
    })
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    page.on("console", (m) => {
      // 4xx answers are the refusals this test asks for; CSP reports would be markup trying to run.
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
  /** Nothing the pages showed ran as markup. */
  const noMarkupRan = async (page: Page) => {
    assert.isUndefined(await page.evaluate(() => (globalThis as unknown as { __annaXss?: number }).__annaXss), "markup from data ran")
    assert.strictEqual(await page.locator("main img[src=x], main script").count(), 0, "markup from data became elements")
  }

  it("the admin schedules jobs, installs and ranks skills, adds and tests MCP servers; a user gets their own schedules and the skills open to them", () =>
    run().catch(onFailure), 480_000)

  const run = async () => {
    const admin = await newPage()
    await login(admin, "admin", ADMIN_PASSWORD)
    await admin.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor()

    // ── Schedules: every 1h for carol (stored only), a cron in Berlin delivered to her; a bad cron refused.
    await nav(admin, "Schedules")
    await admin.getByRole("heading", { level: 1, name: "Schedules" }).waitFor()
    await admin.getByText("No scheduled job.").waitFor()
    const addJob = admin.getByRole("form", { name: "Add a job" })
    await addJob.getByLabel("Agent", { exact: true }).selectOption("default")
    await addJob.getByLabel("Every interval").check()
    await addJob.getByLabel("Interval", { exact: true }).fill("1h")
    await addJob.getByLabel("Prompt", { exact: true }).fill(`Check the build ${XSS}`)
    await addJob.getByLabel("Owner", { exact: true }).fill("carol")
    await addJob.getByRole("button", { name: "Add job" }).click()
    await admin.getByRole("status").filter({ hasText: "Job added." }).waitFor()
    const buildRow = admin.getByRole("row").filter({ hasText: "Check the build" })
    await buildRow.waitFor()
    assert.include((await buildRow.textContent()) ?? "", XSS, "the prompt shows as text, markup and all")
    assert.include((await buildRow.textContent()) ?? "", "every 1h")
    assert.include((await buildRow.textContent()) ?? "", "stored only")

    await addJob.getByLabel("On a cron schedule").check()
    await addJob.getByLabel("Cron expression", { exact: true }).fill("0 25 * * *")
    await addJob.getByLabel("Time zone", { exact: true }).fill("Europe/Berlin")
    await addJob.getByLabel("Prompt", { exact: true }).fill("Weekday brief")
    await addJob.getByLabel("Deliver to", { exact: true }).fill("carol@telegram")
    await addJob.getByRole("button", { name: "Add job" }).click()
    await admin.getByRole("alert").filter({ hasText: "bad cron" }).waitFor()
    await addJob.getByLabel("Cron expression", { exact: true }).fill("0 8 * * 1-5")
    await addJob.getByRole("button", { name: "Add job" }).click()
    const briefRow = admin.getByRole("row").filter({ hasText: "Weekday brief" })
    await briefRow.waitFor()
    assert.include((await briefRow.textContent()) ?? "", "cron 0 8 * * 1-5 (Europe/Berlin)")
    assert.include((await briefRow.textContent()) ?? "", "carol on telegram")

    // Run now: the gateway's scheduler runs it; the history shows the reply, as text.
    const buildId = ((await buildRow.getByRole("rowheader").textContent()) ?? "").trim()
    await buildRow.getByRole("button", { name: `Run ${buildId} now` }).click()
    await admin.getByRole("status").filter({ hasText: `${buildId} will run within seconds` }).waitFor()
    await buildRow.getByRole("button", { name: `History of ${buildId}` }).click()
    const history = admin.getByRole("region", { name: `History of ${buildId}` })
    const runRow = history.getByRole("row").filter({ hasText: "Build is green." })
    await runRow.waitFor()
    assert.include((await runRow.textContent()) ?? "", "ok")
    assert.include((await runRow.textContent()) ?? "", "manual")
    assert.include((await runRow.textContent()) ?? "", XSS, "the model's reply shows as text")
    await admin.screenshot({ path: artifact("automation-schedules.png"), fullPage: true })
    await history.getByRole("button", { name: "Close" }).click()

    // Remove the brief.
    const briefId = ((await briefRow.getByRole("rowheader").textContent()) ?? "").trim()
    await briefRow.getByRole("button", { name: `Remove ${briefId}` }).click()
    await admin.getByRole("alertdialog", { name: `Remove ${briefId}?` }).getByRole("button", { name: "Remove" }).click()
    await admin.getByRole("status").filter({ hasText: `${briefId} removed, with its history.` }).waitFor()
    await briefRow.waitFor({ state: "detached" })
    await noMarkupRan(admin)

    // ── Skills: a global one and one for the agent closed to carol; ranked; a removal.
    await nav(admin, "Skills")
    await admin.getByRole("heading", { level: 1, name: "Skills" }).waitFor()
    const install = admin.getByRole("form", { name: "Install" })
    await install.getByLabel("Source", { exact: true }).fill(join(skillsDir(), "pdf-forms"))
    await install.getByRole("button", { name: "Install" }).click()
    await admin.getByRole("status").filter({ hasText: "Installed pdf-forms (global)." }).waitFor()
    await install.getByLabel("Source", { exact: true }).fill(join(skillsDir(), "ops-runbook"))
    await install.getByLabel("For", { exact: true }).selectOption("ops")
    await install.getByRole("button", { name: "Install" }).click()
    await admin.getByRole("status").filter({ hasText: "Installed ops-runbook (agent ops)." }).waitFor()
    await install.getByLabel("Source", { exact: true }).fill(join(skillsDir(), "pdf-forms"))
    await install.getByRole("button", { name: "Install" }).click()
    await admin.getByRole("alert").filter({ hasText: "already installed" }).waitFor()
    const pdfRow = admin.getByRole("row").filter({ has: admin.getByRole("rowheader", { name: "pdf-forms" }) })
    await pdfRow.waitFor()
    assert.include((await pdfRow.textContent()) ?? "", XSS, "the description shows as text")
    assert.include((await pdfRow.textContent()) ?? "", join(home, "skills", "pdf-forms"), "an admin sees the folder")
    const rank = admin.getByRole("form", { name: "Rank" })
    await rank.getByLabel("Agent", { exact: true }).selectOption("ops")
    await rank.getByLabel("Order", { exact: true }).selectOption("mean")
    await rank.getByRole("button", { name: "Rank" }).click()
    const ranked = rank.getByRole("table", { name: "Skills ranked" })
    await ranked.waitFor()
    assert.sameMembers(await ranked.getByRole("rowheader").allTextContents(), ["ops-runbook", "pdf-forms"])
    await admin.screenshot({ path: artifact("automation-skills.png"), fullPage: true })
    await admin.getByRole("button", { name: "Remove skill ops-runbook (agent ops)" }).click()
    await admin.getByRole("alertdialog").getByRole("button", { name: "Remove" }).click()
    await admin.getByRole("status").filter({ hasText: "Removed ops-runbook (agent ops)." }).waitFor()
    await admin.getByRole("table", { name: "Skills", exact: true }).getByRole("rowheader", { name: "ops-runbook" }).waitFor({ state: "detached" })
    await noMarkupRan(admin)

    // ── MCP servers of the default agent: a remote one with a secret header, a stdio one in the sandbox.
    await nav(admin, "MCP servers")
    await admin.getByRole("heading", { level: 1, name: "MCP servers" }).waitFor()
    await admin.getByText("Agent default has no MCP server.").waitFor()
    const addServer = admin.getByRole("form", { name: "Add a server to default" })
    await addServer.getByLabel("A remote server (URL)").check()
    await addServer.getByLabel("Name", { exact: true }).fill("everything")
    await addServer.getByLabel("URL", { exact: true }).fill(everything?.url ?? "")
    await addServer.getByLabel("Headers", { exact: true }).fill(`Authorization=${HEADER_SECRET}`)
    await addServer.getByRole("button", { name: "Add server" }).click()
    await admin.getByRole("status").filter({ hasText: "Added everything to default." }).waitFor()
    const remoteRow = admin.getByRole("row").filter({ has: admin.getByRole("rowheader", { name: "everything" }) })
    await remoteRow.filter({ hasText: /yes, \d+ tools/ }).waitFor()
    assert.include((await remoteRow.textContent()) ?? "", "(headers: Authorization)")
    await remoteRow.locator("summary").click()
    await remoteRow.getByText("echo", { exact: true }).waitFor()

    await addServer.getByLabel("A command (stdio), run in the agent's sandbox").check()
    await addServer.getByLabel("Name", { exact: true }).fill("local")
    await addServer.getByLabel("Command", { exact: true }).fill("node /workspace/.mcp/everything.mjs stdio")
    await addServer.getByRole("button", { name: "Add server" }).click()
    await admin.getByRole("status").filter({ hasText: "Added local to default." }).waitFor()
    const localRow = admin.getByRole("row").filter({ has: admin.getByRole("rowheader", { name: "local" }) })
    // With Docker and a Node image the server starts in the agent's sandbox; without, the reason is shown.
    await localRow.filter({ hasText: nodeImageReady ? /yes, \d+ tools/ : /no: .*sandbox/i }).waitFor()
    await localRow.getByRole("button", { name: "Test local" }).click()
    await localRow.filter({ hasText: "asking…" }).waitFor({ state: "detached" })
    await localRow.filter({ hasText: nodeImageReady ? /yes, \d+ tools/ : /no: / }).waitFor()
    await admin.screenshot({ path: artifact("automation-mcp.png"), fullPage: true })
    assert.notInclude(await admin.content(), HEADER_SECRET)
    await localRow.getByRole("button", { name: "Remove local" }).click()
    await admin.getByRole("alertdialog", { name: "Remove MCP server local of default?" }).getByRole("button", { name: "Remove" }).click()
    await admin.getByRole("status").filter({ hasText: "Removed local." }).waitFor()
    await localRow.waitFor({ state: "detached" })
    assert.match(gatewayLog, /EX-009/, "the gateway's connections to the remote server are logged as the exception path")

    // ── Carol: her own schedules, the skills of the agents open to her; no MCP page.
    const carol = await newPage({ width: 390, height: 844 })
    await login(carol, "carol", CAROL_PASSWORD)
    await carol.getByRole("heading", { level: 1, name: "Chat" }).waitFor()
    await carol.getByRole("button", { name: "Menu" }).click()
    const links = await carol.getByRole("navigation", { name: "Console" }).getByRole("link").allInnerTexts()
    assert.includeMembers(links, ["Schedules", "Skills"])
    assert.notInclude(links, "MCP servers")
    await nav(carol, "Schedules")
    await carol.getByRole("heading", { level: 1, name: "Schedules" }).waitFor()
    // The admin made the build job for her: it is hers. Nobody else's shows.
    await carol.getByRole("row").filter({ hasText: "Check the build" }).waitFor()
    assert.strictEqual(await carol.getByRole("columnheader", { name: "Owner" }).count(), 0)
    const mine = carol.getByRole("form", { name: "Add a job" })
    const offered = await mine.getByLabel("Agent", { exact: true }).locator("option").evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))
    assert.deepStrictEqual(offered, ["default"], "only the agents open to her")
    await mine.getByLabel("Every interval").check()
    await mine.getByLabel("Interval", { exact: true }).fill("30s")
    await mine.getByLabel("Prompt", { exact: true }).fill("Too often")
    await mine.getByRole("button", { name: "Add job" }).click()
    await carol.getByRole("alert").filter({ hasText: "at least 1m" }).waitFor()
    await mine.getByLabel("Interval", { exact: true }).fill("2h")
    await mine.getByLabel("Prompt", { exact: true }).fill(`Water the plants ${XSS}`)
    await mine.getByLabel("On", { exact: true }).selectOption("telegram")
    await mine.getByRole("button", { name: "Add job" }).click()
    const plants = carol.getByRole("row").filter({ hasText: "Water the plants" })
    await plants.waitFor()
    assert.include((await plants.textContent()) ?? "", "carol on telegram")
    assert.include((await plants.textContent()) ?? "", XSS)
    await carol.screenshot({ path: artifact("automation-schedules-phone.png"), fullPage: true })
    await noMarkupRan(carol)

    await carol.getByRole("button", { name: "Menu" }).click()
    await nav(carol, "Skills")
    await carol.getByRole("heading", { level: 1, name: "Skills" }).waitFor()
    await carol.getByRole("rowheader", { name: "pdf-forms" }).waitFor()
    assert.strictEqual(await carol.getByRole("columnheader", { name: "Folder" }).count(), 0, "no host path for a user")
    assert.strictEqual(await carol.getByRole("form", { name: "Install" }).count(), 0)
    assert.strictEqual(await carol.getByRole("button", { name: /^Remove skill/ }).count(), 0)
    assert.notInclude(await carol.content(), join(home, "skills"))
    const herRank = carol.getByRole("form", { name: "Rank" })
    await herRank.getByRole("button", { name: "Rank" }).click()
    await herRank.getByRole("table", { name: "Skills ranked" }).getByRole("rowheader", { name: "pdf-forms" }).waitFor()
    await noMarkupRan(carol)
    // The MCP page is the operator's, even by address.
    await carol.goto(`${base}/#/mcp`)
    await carol.getByRole("heading", { level: 1, name: "Chat" }).waitFor()

    // And the admin sees her job among everyone's.
    await nav(admin, "Schedules")
    await admin.getByRole("row").filter({ hasText: "Water the plants" }).filter({ hasText: "carol" }).waitFor()

    for (const body of apiBodies) assert.notInclude(body, HEADER_SECRET, "an API response carried the header's value")
    assert.notInclude(gatewayLog, HEADER_SECRET)
    assert.deepStrictEqual([...pageErrors(admin), ...pageErrors(carol)], [])
  }
})
