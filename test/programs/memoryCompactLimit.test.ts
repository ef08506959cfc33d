/**
 * `anna memory compact` and the summarizer's spend guard (issue 24, item 2): `--max-summary-calls`
 * is the limit of that run, and a run a limit stopped says which limit and how to raise it.
 * Real processes, real SQLite, the fake LLM server as the provider.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { annaEnv, newHome } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { toJsonl, transcript } from "../support/transcript.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
  fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "A short fake summary." }] }))
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const KEY = "sk-limit-0123456789abcdef"
const SESSION = "default:cli:u1:main"

const setupHome = async () => {
  const h = newHome()
  homes.push(h)
  const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: KEY }
  const run = (...args: ReadonlyArray<string>) => annaEnv(h, env, ...args)
  const ok = async (...args: ReadonlyArray<string>) => {
    const r = await run(...args)
    if (r.code !== 0) throw new Error(`anna ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`)
    return r
  }
  const file = join(h, "t.jsonl")
  writeFileSync(file, toJsonl(transcript(3000, 7)))
  await ok("onboard", "--from-env")
  await ok("memory", "import", SESSION, file)
  return { run, ok }
}

interface Report {
  readonly stopReason: string
  readonly compacted: boolean
  readonly notice?: string
  readonly spendGuard?: { readonly calls: number; readonly limit: number; readonly setBy: string; readonly agentId: string }
}

/** Runs `anna memory compact … --json`; returns the report, the exit code and the model calls it made. */
const compactJson = async (run: (...args: ReadonlyArray<string>) => ReturnType<typeof annaEnv>, ...flags: ReadonlyArray<string>) => {
  const before = fake.requests.length
  const r = await run("memory", "compact", SESSION, "--full", ...flags, "--json")
  return { code: r.code, report: JSON.parse(r.stdout) as Report, calls: fake.requests.length - before, stderr: r.stderr }
}

describe("anna memory compact and the summarizer's limit", () => {
  it("--max-summary-calls raises the agent's limit for that run, and stops there saying so", async () => {
    const { run, ok } = await setupHome()
    await ok("agent", "set", "default", "--summary-max-calls", "2")
    const { code, report, calls, stderr } = await compactJson(run, "--max-summary-calls", "6")
    assert.strictEqual(calls, 6, `model calls made (the agent's limit is 2, the flag 6):\n${stderr}`)
    assert.strictEqual(report.stopReason, "spend_guard")
    assert.deepInclude(report.spendGuard, { calls: 6, limit: 6, setBy: "run" })
    assert.include(report.notice, "Stopped by --max-summary-calls 6")
    assert.include(report.notice, "run again with a larger --max-summary-calls")
    assert.strictEqual(code, 1, "a run the spend guard stopped is not a silent success")
  })

  it("--max-summary-calls lowers the limit for that run", async () => {
    const { run } = await setupHome()
    const { report, calls } = await compactJson(run, "--max-summary-calls", "3")
    assert.strictEqual(calls, 3)
    assert.strictEqual(report.stopReason, "spend_guard")
  })

  it("a run the agent's spend guard stops names that limit and how to raise it; the flag then goes on", async () => {
    const { run } = await setupHome()
    const agentLimit = await run("agent", "set", "default", "--summary-max-calls", "2")
    assert.strictEqual(agentLimit.code, 0, agentLimit.stderr)
    const stopped = await run("memory", "compact", SESSION, "--full")
    assert.strictEqual(stopped.code, 1, stopped.stderr)
    assert.include(stopped.stdout, "stopped: spend_guard.")
    const notice = stopped.stderr.split("\n").find((l) => l.startsWith("Stopped by")) ?? ""
    assert.include(notice, "agent default's spend guard (--summary-max-calls 2): 2 summarizer calls for default:cli:u1:main in the last 60 minutes")
    assert.include(notice, `anna memory compact ${SESSION} --max-summary-calls N`)
    assert.include(notice, "anna agent set default --summary-max-calls N")

    const { code, report } = await compactJson(run, "--max-summary-calls", "100")
    assert.strictEqual(code, 0)
    assert.notStrictEqual(report.stopReason, "spend_guard")
    assert.isTrue(report.compacted)
    assert.isUndefined(report.notice)
  })
})
