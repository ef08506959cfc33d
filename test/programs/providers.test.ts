/**
 * Providers as a new user meets them: `anna onboard --from-env` against an OpenAI-compatible server
 * (the fake LLM server on 127.0.0.1), model listing, compaction by that server's model, a failing
 * and a rate-limiting provider; model prices set, listed and removed, and usage costed from them.
 * Real processes, real SQLite.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import type { CompactionReport, SessionStats, SummaryDescription, Assembled } from "../../src/domain/memory/types.ts"
import { annaEnv, newHome } from "../support/cli.ts"
import { type FakeLlm, startFakeLlm } from "../support/fakeLlm/server.ts"
import { toJsonl, transcript } from "../support/transcript.ts"

let fake: FakeLlm
const homes: Array<string> = []
beforeAll(async () => {
  fake = await startFakeLlm()
})
afterAll(async () => {
  await fake.close()
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const KEY = "sk-onboard-0123456789abcdef"
const setupHome = async (count = 600) => {
  const h = newHome()
  homes.push(h)
  const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: KEY }
  const run = (...args: ReadonlyArray<string>) => annaEnv(h, env, ...args)
  const json = async <A>(...args: ReadonlyArray<string>): Promise<A> => {
    const r = await run(...args, "--json")
    if (r.code !== 0) throw new Error(`anna ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`)
    return JSON.parse(r.stdout) as A
  }
  const file = join(h, "t.jsonl")
  writeFileSync(file, toJsonl(transcript(count, 21)))
  return { h, run, json, file }
}

const summarize = () =>
  fake.respondWith((req) => ({
    kind: "reply",
    parts: [{ type: "text", text: `Fake-model summary #${fake.requests.length} of ${JSON.stringify(req.body).length} bytes. Expand for details about: tools` }]
  }))

describe("providers from the command line", () => {
  it("onboards from the environment once, lists the server's models, never prints the key", async () => {
    fake.models = ["fake-large", "fake-small"]
    const { run, json } = await setupHome()
    const first = await json<{ createdProviders: Array<{ id: string; type: string; defaultModel: string; modelSource: string }>; createdAgent: string | null }>(
      "onboard",
      "--from-env"
    )
    assert.deepStrictEqual(first.createdProviders, [{ id: "openai", type: "openai", defaultModel: "fake-large", modelSource: "server" }])
    assert.strictEqual(first.createdAgent, "default")
    const second = await json<{ createdProviders: Array<unknown>; existingProviders: Array<string>; createdAgent: string | null }>(
      "onboard",
      "--from-env"
    )
    assert.deepStrictEqual([second.createdProviders, second.existingProviders, second.createdAgent], [[], ["openai"], null])

    const models = await run("provider", "models")
    assert.strictEqual(models.code, 0, models.stderr)
    assert.deepStrictEqual(models.stdout.trim().split("\n"), ["openai/fake-large", "openai/fake-small"])

    for (const args of [["provider", "list"], ["provider", "list", "--json"], ["agent", "list", "--json"], ["onboard", "--from-env"]]) {
      const r = await run(...args)
      assert.strictEqual(r.code, 0, r.stderr)
      assert.notInclude(r.stdout + r.stderr, KEY, `${args.join(" ")} printed the key`)
    }
    assert.include((await run("provider", "list")).stdout, "sk-…cdef")
  })

  it("compacts with the server's model and says so; describe shows that model's summary", async () => {
    summarize()
    const { run, json, file } = await setupHome()
    await json("onboard", "--from-env")
    await json("memory", "import", "default:cli:u1:main", file)
    const before = fake.requests.length
    const r = await run("memory", "compact", "default:cli:u1:main", "--full")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.include(r.stderr, "summarizer: openai/fake-large (agent default's main model, no summary model set)")
    assert.isAbove(fake.requests.length, before)
    const a = await json<Assembled>("memory", "assemble", "default:cli:u1:main", "--budget", "100000")
    const first = a.messages[0]
    const id = typeof first?.content === "string" ? /id="(sum_\d+)"/.exec(first.content)?.[1] : undefined
    const d = await json<SummaryDescription>("memory", "describe", id ?? "none")
    assert.match(d.content, /^Fake-model summary #\d+/)
    const usage = await json<Array<{ purpose: string; calls: number }>>("provider", "usage")
    assert.strictEqual(usage[0]?.purpose, "summary")
    assert.strictEqual(usage[0]?.calls, fake.requests.length - before)

    const cheap = await run("agent", "set", "default", "--summary-model", "openai/fake-small")
    assert.strictEqual(cheap.code, 0, cheap.stderr)
    await json("memory", "import", "default:cli:u1:main", file, "--append")
    const next = fake.requests.length
    const again = await run("memory", "compact", "default:cli:u1:main")
    assert.include(again.stderr, "summarizer: openai/fake-small (agent default's summary model)")
    assert.strictEqual((fake.requests[next]?.body as { model?: string } | undefined)?.model, "fake-small")
  })

  it("prices a model, lists prices, costs usage from them (a COST column), removes them", async () => {
    const { run, json } = await setupHome()
    await json("onboard", "--from-env")
    fake.script({ kind: "reply", parts: [{ type: "text", text: "priced" }], usage: { input: 1000, output: 100 } })
    const turn = await run("chat", "-p", "hi")
    assert.strictEqual(turn.code, 0, turn.stderr)
    const plain = await run("provider", "usage")
    assert.notInclude(plain.stdout, "COST", "no price yet: no COST column")
    assert.deepInclude((await json<Array<{ purpose: string; cost: number | null; unpricedCalls: number }>>("provider", "usage")).find((u) => u.purpose === "chat"), {
      cost: null,
      unpricedCalls: 1
    })

    const set = await run("provider", "price", "openai", "fake-large", "--input", "2.5", "--output", "10")
    assert.strictEqual(set.code, 0, set.stderr)
    assert.include(set.stdout, "Price of openai/fake-large set: input $2.5, output $10 per million tokens.")
    for (const [args, says] of [
      [["--input", "20000", "--output", "1"], "from 0 to 10000"],
      [["--input", "1"], "give --input and --output"],
      [["--input", "1", "--output", "1", "--remove"], "--remove takes no prices"]
    ] as const) {
      const r = await run("provider", "price", "openai", "fake-large", ...args)
      assert.notStrictEqual(r.code, 0, args.join(" "))
      assert.include(r.stderr, says)
    }
    const unknown = await run("provider", "price", "nope", "m", "--input", "1", "--output", "1")
    assert.include(unknown.stderr, 'no provider "nope"')

    assert.deepStrictEqual(await json("provider", "prices"), [{ providerId: "openai", model: "fake-large", input: 2.5, output: 10, cacheRead: null, cacheWrite: null }])
    const listed = await run("provider", "prices", "openai")
    assert.match(listed.stdout, /openai\s+fake-large\s+\$2\.5\s+\$10\s+\(input\)/)
    // 1000 input tokens at $2.5 and 100 output at $10 per million: $0.0035.
    const chat = (await json<Array<{ purpose: string; cost: number | null; unpricedCalls: number }>>("provider", "usage")).find((u) => u.purpose === "chat")
    assert.closeTo(chat?.cost ?? Number.NaN, 0.0035, 1e-12)
    assert.strictEqual(chat?.unpricedCalls, 0)
    const costed = await run("provider", "usage")
    assert.include(costed.stdout, "COST")
    assert.match(costed.stdout, /chat .*\$0\.0035/)

    assert.strictEqual((await run("provider", "price", "openai", "fake-large", "--remove")).code, 0)
    const again = await run("provider", "price", "openai", "fake-large", "--remove")
    assert.notStrictEqual(again.code, 0)
    assert.include(again.stderr, "no price is set for openai/fake-large")
    assert.include((await run("provider", "prices")).stdout, "No prices set.")
  })

  it("a provider answering 500 to every summary: one call (retried twice), then deterministic summaries, one warning", async () => {
    fake.respondWith(() => ({ kind: "error", status: 500, message: "summarizer exploded" }))
    const { run, json, file } = await setupHome()
    await json("onboard", "--from-env")
    await json("memory", "import", "default:cli:u1:main", file)
    const before = fake.requests.length
    const r = await run("memory", "compact", "default:cli:u1:main", "--full", "--json")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(fake.requests.length - before, 3, "the provider's breaker opened after the first call")
    const report = JSON.parse(r.stdout) as CompactionReport
    assert.isTrue(report.compacted)
    assert.isAbove(report.leafSummaries + report.condensedSummaries, 1)
    const warnings = r.stderr.split("\n").filter((l) => l.includes("summarizer exploded"))
    assert.strictEqual(warnings.length, 1, r.stderr)
    assert.include(warnings[0] ?? "", "no summary calls to provider openai for 60 s")
    const stats = await json<SessionStats>("memory", "stats", "default:cli:u1:main")
    assert.strictEqual(stats.messages, 600)
    assert.isAbove(stats.summaries, 0)
    assert.strictEqual((await run("memory", "verify")).code, 0)
  })

  it("a provider answering 429 twice, then normally, is retried to success", async () => {
    summarize()
    const { run, json, file } = await setupHome(300)
    await json("onboard", "--from-env")
    await json("memory", "import", "default:cli:u1:main", file)
    fake.script({ kind: "error", status: 429, retryAfter: 1, message: "rate limited" }, { kind: "error", status: 429, retryAfter: 1, message: "rate limited" })
    const r = await run("memory", "compact", "default:cli:u1:main", "--json")
    assert.strictEqual(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout) as CompactionReport & { summarizer: string }
    assert.isTrue(report.compacted)
    assert.include(report.summarizer, "openai/fake-large")
  })

  it("adds, lists and removes providers by hand; agents point at them; mistakes get one clear line", async () => {
    const { run, json } = await setupHome(10)
    const added = await annaEnv(
      homes[homes.length - 1] ?? "",
      { MY_KEY: "sk-from-env-777777" },
      "provider",
      "add",
      "local",
      "--type",
      "openai-response",
      "--base-url",
      fake.openAiUrl,
      "--api-key-env",
      "MY_KEY",
      "--header",
      "x-team=family"
    )
    assert.strictEqual(added.code, 0, added.stderr)
    assert.include(added.stdout, "default model fake-large")
    assert.notInclude(added.stdout, "sk-from-env-777777")
    const list = await json<Array<{ id: string; type: string; apiKey: string; headers: Record<string, string> }>>("provider", "list")
    // Every header value is masked: anna cannot tell which ones authenticate.
    assert.deepStrictEqual(list.map((p) => [p.id, p.type, p.apiKey, p.headers["x-team"]]), [["local", "openai-response", "sk-…7777", "***"]])
    const dup = await run("provider", "add", "local", "--type", "openai", "--default-model", "m")
    assert.deepStrictEqual([dup.code, dup.stderr.trim()], [1, "anna: a provider \"local\" already exists (remove it first, or pick another id)"])
    const badType = await run("provider", "add", "x", "--type", "gemini", "--default-model", "m")
    assert.strictEqual(badType.code, 2)
    const set = await run("agent", "set", "helper", "--model", "local/fake-small", "--summary-max-calls", "5")
    assert.strictEqual(set.code, 0, set.stderr)
    assert.include(set.stdout, "Created agent helper")
    const ghost = await run("agent", "set", "helper", "--summary-model", "nowhere/x")
    assert.deepStrictEqual([ghost.code, ghost.stderr.trim()], [1, "anna: no provider \"nowhere\" (see: anna provider list)"])
    const inUse = await run("provider", "remove", "local")
    assert.strictEqual(inUse.code, 1)
    assert.include(inUse.stderr, "used by agent(s) helper")
    const models = await run("provider", "models", "local")
    assert.include(models.stdout, "local/fake-large")
  })

  it("falls back to the deterministic summarizer when no provider exists, and says so", async () => {
    const h = newHome()
    homes.push(h)
    const file = join(h, "t.jsonl")
    writeFileSync(file, toJsonl(transcript(300, 3)))
    await annaEnv(h, {}, "memory", "import", "k", file)
    const r = await annaEnv(h, {}, "memory", "compact", "k")
    assert.strictEqual(r.code, 0, r.stderr)
    assert.include(r.stderr, "summarizer: deterministic (no model provider configured)")
    const nothing = await annaEnv(h, {}, "onboard", "--from-env")
    assert.include(nothing.stdout, "Nothing to do")
  })

  it("sets a provider's first-byte timeout at add and later, refusing nonsense with a clear error", async () => {
    const h = newHome()
    homes.push(h)
    type Shown = { id: string; firstByteTimeoutSeconds?: number }
    const json = async (...args: ReadonlyArray<string>): Promise<Shown> => {
      const r = await annaEnv(h, {}, ...args, "--json")
      if (r.code !== 0) throw new Error(`anna ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`)
      return JSON.parse(r.stdout) as Shown
    }
    const common = ["--type", "openai", "--base-url", fake.openAiUrl, "--default-model", "fake-large"]
    const bad = await annaEnv(h, {}, "provider", "add", "slow", ...common, "--first-byte-timeout", "0")
    assert.strictEqual(bad.code, 2, "a value out of range: a usage error")
    assert.include(bad.stderr, "first-byte timeout must be a number of seconds above 0")
    assert.strictEqual((await json("provider", "add", "slow", ...common, "--first-byte-timeout", "90")).firstByteTimeoutSeconds, 90)
    assert.strictEqual((await json("provider", "set", "slow", "--first-byte-timeout", "2.5")).firstByteTimeoutSeconds, 2.5)
    const listed = JSON.parse((await annaEnv(h, {}, "provider", "list", "--json")).stdout) as Array<Shown>
    assert.strictEqual(listed[0]?.firstByteTimeoutSeconds, 2.5)
    assert.match((await annaEnv(h, {}, "provider", "list")).stdout, /FIRST BYTE[\s\S]*\b2\.5 s\b/)
    assert.isUndefined((await json("provider", "set", "slow", "--first-byte-timeout", "default")).firstByteTimeoutSeconds)
    const nonsense = await annaEnv(h, {}, "provider", "set", "slow", "--first-byte-timeout", "soon")
    // A usage error: the problem, then the command's usage.
    assert.deepStrictEqual([nonsense.code, nonsense.stderr.split("\n")[0]], [
      2,
      'anna: --first-byte-timeout takes seconds above 0 and at most 3600, or "default"; got "soon"'
    ])
    assert.match(nonsense.stderr, /^usage: anna provider set /m)
    const ghost = await annaEnv(h, {}, "provider", "set", "nowhere", "--first-byte-timeout", "5")
    assert.strictEqual(ghost.code, 1)
  })

  it("rotates a provider's key in place while an agent uses it, and changes its other settings", async () => {
    const h = newHome()
    homes.push(h)
    const ok = async (env: Record<string, string>, ...args: ReadonlyArray<string>) => {
      const r = await annaEnv(h, env, ...args)
      if (r.code !== 0) throw new Error(`anna ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`)
      return r.stdout
    }
    await ok({}, "provider", "add", "local", "--type", "openai", "--base-url", fake.openAiUrl, "--api-key", "sk-old-key-000000aaaa", "--default-model", "fake-large")
    await ok({}, "agent", "set", "default", "--model", "local/fake-large")
    // In use, so it cannot be removed: the key changes in place, read from the environment.
    assert.strictEqual((await annaEnv(h, {}, "provider", "remove", "local")).code, 1)
    const rotated = await ok({ NEW_KEY: "sk-new-key-000000bbbb" }, "provider", "set", "local", "--api-key-env", "NEW_KEY", "--default-model", "fake-small", "--disable")
    assert.include(rotated, "key sk-…bbbb")
    assert.include(rotated, "disabled, default model fake-small")
    assert.notInclude(rotated, "sk-new-key-000000bbbb")
    const shown = JSON.parse(await ok({}, "provider", "list", "--json")) as Array<{ apiKey: string; enabled: boolean; defaultModel: string }>
    assert.deepStrictEqual(shown.map((p) => [p.apiKey, p.enabled, p.defaultModel]), [["sk-…bbbb", false, "fake-small"]])
    // The next call carries the new key.
    await ok({}, "provider", "set", "local", "--enable")
    fake.respondWith(() => ({ kind: "reply", parts: [{ type: "text", text: "hello with the new key" }] }))
    assert.include(await ok({}, "chat", "-p", "hi"), "hello with the new key")
    assert.strictEqual(fake.requests.at(-1)?.headers["authorization"], "Bearer sk-new-key-000000bbbb")
    // Nothing to change, contradictions and a bad URL are refused; the bad URL's credentials are not quoted.
    const none = await annaEnv(h, {}, "provider", "set", "local")
    assert.deepStrictEqual([none.code, none.stderr.includes("nothing to change")], [2, true])
    assert.strictEqual((await annaEnv(h, {}, "provider", "set", "local", "--enable", "--disable")).code, 2)
    const badUrl = await annaEnv(h, {}, "provider", "set", "local", "--base-url", "ftp://user:hunter2secret@x")
    assert.strictEqual(badUrl.code, 2)
    assert.notInclude(badUrl.stderr, "hunter2secret")
  })
})
