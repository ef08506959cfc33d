/**
 * Issue 11, as the user tried it: an agent at `--context-tokens 6000` (a local model's window)
 * behind the real gateway process, talked to through the HTTP channel with the OpenAI SDK. "Remember
 * FACT-3003: the staging database is on port 6543", then 150 ordinary turns, then a question about
 * it. The fake LLM server plays both the chat model and, for requests without tools, the summary
 * model (the gateway's ModelSummarizer on the agent's model, as in production): a summary that keeps
 * the FACT lines it was given, so what reaches the model is what memory kept, not luck.
 *
 * Done when: the request the model receives for the question holds FACT-3003 (in a summary), the
 * summarizer was called only on turns whose compaction gained a meaningful share of the budget
 * (never twice in a row for nothing, at most 8 calls in a turn, a bounded total), every model call
 * asks for the proportional output reserve (1,500 tokens, not 8,192; `anna agent set
 * --max-output-tokens` changes it from the next turn), and the answers' content is the model's text
 * only — the "compacted …" status comes in the completion's `anna.status`.
 */
import { assert, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import type { RecordedRequest } from "../support/fakeLlm/script.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite()

interface Body {
  readonly max_tokens?: number
  readonly tools?: ReadonlyArray<unknown>
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content?: unknown }>
}
const bodyOf = (r: RecordedRequest | undefined) => (r?.body ?? {}) as Body
/** The summarizer's requests carry no tools; the agent's carry its memory tool. */
const isSummary = (r: RecordedRequest) => r.method === "POST" && (bodyOf(r).tools ?? []).length === 0
const isChat = (r: RecordedRequest) => r.method === "POST" && !isSummary(r)

const REPLY = "Noted. I will keep that in mind for the rest of our conversation."
const ordinary = (i: number) =>
  `Ordinary turn ${i}: today we talked about the weather in city number ${i % 17}, the plans for the weekend, ` +
  `a book chapter, and what to cook for dinner. Nothing here needs to be remembered for long.`

describe("e2e: a 6,000-token window keeps an early fact", () => {
  it("after 150 ordinary turns the model still receives FACT-3003, and the summarizer only runs when it gains", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-small" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    await cli("agent", "set", "default", "--tools", "memory", "--context-tokens", "6000")
    await cli("user", "add", "uma")
    const token = (await cli("user", "token", "uma")).trim()
    fake.respondWith((req) => {
      if (!isSummary(req)) return { kind: "reply", parts: [{ type: "text", text: REPLY }] }
      // A summary model that writes about 80 % of the size it is asked for ("at most about N tokens"),
      // keeping every FACT line it was given (JSON-escaped text ends at a quote or \n).
      const prompt = JSON.stringify(bodyOf(req).messages ?? [])
      const target = Number(/at most about (\d+) tokens/.exec(prompt)?.[1] ?? 100)
      const facts = [...new Set(prompt.match(/FACT-\d+[^"\\]*/g) ?? [])]
      const filler = "Small talk about the weather, weekend plans, a book and dinner. ".repeat(Math.ceil((target * 4 * 0.8) / 64))
      return { kind: "reply", parts: [{ type: "text", text: [...facts, filler.slice(0, Math.max(40, target * 4 * 0.8 - facts.join("").length))].join("\n") }] }
    })

    const gateway = start(home, ["gateway", "--port", "0"], "info", env)
    let log = ""
    gateway.stdout?.on("data", (d: Buffer) => (log += d.toString()))
    gateway.stderr?.on("data", (d: Buffer) => (log += d.toString()))
    const done = finish(gateway)
    try {
      await waitForOutput(gateway, "press Ctrl+C")
      const url = /HTTP channel \(OpenAI-compatible\) on (\S+);/.exec(log)?.[1]
      if (url === undefined) throw new Error(`no HTTP channel address in:\n${log}`)
      const client = new OpenAI({ baseURL: url, apiKey: token, maxRetries: 0 })
      interface Turn {
        readonly summaries: number
        readonly status: ReadonlyArray<string>
        readonly content: string
      }
      const turns: Array<Turn> = []
      const ask = async (content: string) => {
        const before = fake.requests.length
        const r = await client.chat.completions.create({ model: "default", user: "ops", messages: [{ role: "user", content }] })
        const status = (r as unknown as { readonly anna?: { readonly status?: ReadonlyArray<string> } }).anna?.status ?? []
        turns.push({ summaries: fake.requests.slice(before).filter(isSummary).length, status, content: r.choices[0]?.message.content ?? "" })
      }

      await ask("Remember FACT-3003: the staging database is on port 6543")
      for (let i = 1; i <= 150; i++) await ask(ordinary(i))
      await ask("Which port is the staging database on?")

      // What the model received for the question holds the fact, inside a summary.
      const question = bodyOf(fake.requests.filter(isChat).at(-1))
      const sent = (question.messages ?? []).map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
      assert.isTrue(
        sent.some((text) => text.startsWith("<memory-summary") && text.includes("FACT-3003: the staging database is on port 6543")),
        `FACT-3003 is not in a summary the model received:\n${sent.map((t) => t.slice(0, 120)).join("\n")}`
      )
      assert.notInclude(JSON.stringify(question.messages?.slice(-3)), "FACT-3003", "the fact came from a summary, not the fresh tail")

      // Every model call asked for the proportional reserve of a 6,000-token window.
      assert.deepStrictEqual([...new Set(fake.requests.filter(isChat).map((r) => bodyOf(r).max_tokens))], [1_500])

      // The answers are the model's text only; compaction is told as status, out of the content.
      for (const t of turns) assert.strictEqual(t.content, REPLY)
      const compactions = turns.flatMap((t, i) => (t.summaries > 0 ? [i] : []))
      const summaryCalls = turns.reduce((n, t) => n + t.summaries, 0)
      const trace = JSON.stringify(turns.map((t) => [t.summaries, t.status.join(" ")]).filter(([n]) => n !== 0))
      assert.isAtLeast(compactions.length, 3, `the conversation outgrew the window: ${trace}`)
      // Before issue 11: a compaction on nearly every turn (150 summarizer calls and more).
      assert.isAtMost(summaryCalls, 30, trace)
      for (const i of compactions) {
        const t = turns[i]
        assert.isAtMost(t?.summaries ?? 0, 8, trace)
        const gained = /compacted the conversation: (\d+) → (\d+) tokens/.exec(t?.status.join(" ") ?? "")
        assert.isNotNull(gained, `turn ${i} called the summarizer without compacting: ${trace}`)
        // A meaningful share: at least a tenth of what the context held.
        const [from, to] = [Number(gained?.[1]), Number(gained?.[2])]
        assert.isAtLeast(from - to, from / 10, `turn ${i} gained little: ${trace}`)
      }
      // Never twice in a row: after a compaction, the context must grow again first.
      for (let k = 1; k < compactions.length; k++) {
        assert.isAtLeast((compactions[k] ?? 0) - (compactions[k - 1] ?? 0), 3, `compactions on turns ${compactions.join(", ")}`)
      }

      // The reserve is the operator's to set, from the next turn of the running gateway.
      assert.include(await cli("agent", "show", "default"), "1500 tokens (proportional to the context window)")
      assert.include(await cli("agent", "set", "default", "--max-output-tokens", "1000"), "output reserve")
      await ask("And the production database?")
      assert.strictEqual(bodyOf(fake.requests.filter(isChat).at(-1)).max_tokens, 1_000)
      const refused = await annaEnv(home, env, "agent", "set", "default", "--max-output-tokens", "-5")
      assert.notStrictEqual(refused.code, 0)
      assert.include(refused.stderr, "output reserve")
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await done).code, 0)
  }, 180_000)
})
