/**
 * The self-improving memory (issue 15) with real parts, each figure against a floor:
 *
 * - Learning.beforeTurn, what every turn pays before its model call: the real layers
 *   (src/programs/compose.ts `learning`) on a real SQLite file and a temporary $ANNA_HOME; agent
 *   `bench` with a playbook of 200 rules and a global one of 200 (YAML files, tags from a vocabulary
 *   of 50 words), 1,000 diary entries (100 of them the measured session's). Its steps alone (plugin
 *   check, the two files' stat + tags, the session's recent diary tags, the selection, recording
 *   the uses) show where the time goes; floors: `SELECT 1` through the same SqlClient and the pure
 *   `selectRules` + `formatForPrompt` on the same rules. Also with the plugin `learning` off, and the
 *   first turn after the agent's file was rewritten (as reflection and feedback do: a parse again).
 * - `selectRules` alone over 100 and 1,000 rules.
 * - The YAML file: `parsePlaybook` / `stringifyPlaybook` of 1,000 rules; `Playbook.feedback` on one
 *   rule of a 1,000-rule file (read, change, atomic write) against writing the same bytes with
 *   writeFileSync + fsync + rename.
 * - Reflection bookkeeping without the model: `heuristicEntry` on a 200-message burst, and
 *   `Diary.settleUses` of 50 uses against the same UPDATE … RETURNING undecoded.
 * - Thompson ranking of 100 skills (`rank(…, "sample")`) against ranking by mean.
 */
import { Effect, Layer, Logger, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { closeSync, fsyncSync, mkdirSync, openSync, promises as fs, renameSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { dirname, join } from "node:path"
import { round4 } from "../src/domain/learning/confidence.ts"
import { formatForPrompt, selectRules } from "../src/domain/learning/context.ts"
import type { DiaryEntry } from "../src/domain/learning/diary.ts"
import { heuristicEntry } from "../src/domain/learning/heuristic.ts"
import { MATURITIES, type PlaybookRule } from "../src/domain/learning/rule.ts"
import { conversationTags, RECENT_ENTRIES_FOR_TAGS } from "../src/domain/learning/tags.ts"
import { type Arm, rank } from "../src/domain/learning/thompson.ts"
import { parsePlaybook, stringifyPlaybook } from "../src/domain/learning/yaml.ts"
import type { Message } from "../src/domain/message.ts"
import * as SqliteConfigStore from "../src/layers/config/SqliteConfigStore.ts"
import { PLUGIN_ID } from "../src/layers/learning/ReflectiveLearning.ts"
import * as SessionLocks from "../src/layers/memory/SessionLocks.ts"
import * as SqliteMemoryStore from "../src/layers/memory/SqliteMemoryStore.ts"
import * as SdkProviderRegistry from "../src/layers/providers/SdkProviderRegistry.ts"
import * as Sqlite from "../src/layers/sql/Sqlite.ts"
import * as Compose from "../src/programs/compose.ts"
import { AgentStore } from "../src/services/AgentStore.ts"
import { AppConfig } from "../src/services/AppConfig.ts"
import { Diary } from "../src/services/Diary.ts"
import { Learning } from "../src/services/Learning.ts"
import { Playbook } from "../src/services/Playbook.ts"
import { PluginStore } from "../src/services/PluginStore.ts"
import { ProviderStore } from "../src/services/ProviderStore.ts"
import { ratios } from "./support/common.ts"
import { int, ms, print, progress, ratio, type SampleOptions, sampleEffect, sampleSync, section, type Summary, summarize, table } from "./support/measure.ts"

const AGENT = "bench"
/** The agent whose own playbook has 1,000 rules (the feedback write); never chats. */
const BIG_AGENT = "bench-big"
const USER = "u1"
const SESSION = `${AGENT}:cli:${USER}:dm`
const CHAT = { sessionKey: SESSION, agentId: AGENT, userId: USER }
const MESSAGE = "The docker build fails again since I changed the nginx config; can you read the deploy logs and check the ssl certificate?"

const VOCABULARY = (
  "docker nginx deploy postgres python typescript git ci tests logs backup cron ssl dns kubernetes redis api auth email " +
  "calendar invoice budget travel recipe translation german french markdown pdf excel sql migration performance memory " +
  "cache security firewall vpn linux macos windows shell regex json yaml csv webhook telegram schedule report"
).split(" ")

/** Per-turn reads: microseconds each, many samples. */
const READS: SampleOptions = { warmup: 300, min: 3_000, max: 3_000, budgetMs: 0 }
const PURE: SampleOptions = { warmup: 200, min: 2_000, max: 2_000, budgetMs: 0 }
/** Whole-file work: milliseconds each. */
const FILES: SampleOptions = { warmup: 3, min: 30, max: 30, budgetMs: 0 }
const DAY = 86_400_000

/** A seeded uniform source (mulberry32), so every run plays on the same data. */
const seeded = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
type Random = ReturnType<typeof seeded>
const pick = <A>(random: Random, items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)] as A
const words = (random: Random, n: number): ReadonlyArray<string> => {
  const out = new Set<string>()
  while (out.size < n) out.add(pick(random, VOCABULARY))
  return [...out]
}

/** `n` rules: 2–4 tags each, one in ten an anti-pattern, one in seven another user's, ages up to 120 days. */
const makeRules = (prefix: string, n: number, seed: number, now: number): ReadonlyArray<PlaybookRule> => {
  const random = seeded(seed)
  return Array.from({ length: n }, (_, i) => {
    const tags = words(random, 2 + Math.floor(random() * 3))
    const successCount = Math.floor(random() * 12)
    const failureCount = Math.floor(random() * 4)
    const createdAt = now - Math.floor(random() * 120 * DAY)
    return {
      id: `${prefix}-${String(i).padStart(4, "0")}`,
      text: `When the ${tags[0]} work touches ${tags[1]}, check the ${pick(random, VOCABULARY)} settings first and say what you changed (${prefix} ${i})`,
      confidence: round4(0.1 + random() * 0.85),
      maturity: pick(random, MATURITIES),
      successCount,
      failureCount,
      antiPattern: i % 10 === 0,
      sourceEntries: [`diary_${(createdAt / 1000).toString(36)}_${i}`],
      tags,
      createdAt,
      lastAppliedAt: random() < 0.5 ? null : createdAt + Math.floor(random() * (now - createdAt)),
      ...(i % 7 === 3 ? { user: "u2" } : {})
    }
  })
}

/** 1,000 entries: 100 of the measured session, 900 over nine others of the agent, 3 tags each. */
const makeEntries = (now: number): ReadonlyArray<DiaryEntry> => {
  const random = seeded(15_002)
  return Array.from({ length: 1_000 }, (_, i) => {
    const session = i % 10 === 0 ? SESSION : `${AGENT}:cli:u${2 + (i % 10)}:dm`
    return {
      id: `diary_bench_${String(i).padStart(4, "0")}`,
      sessionKey: session,
      agentId: AGENT,
      userId: session.split(":")[2] ?? USER,
      fromSeq: i * 20,
      toSeq: i * 20 + 19,
      accomplishments: [`asked: a question about ${pick(random, VOCABULARY)}`],
      decisions: [],
      challenges: [],
      keyLearnings: [],
      tags: words(random, 3),
      status: pick(random, ["success", "failure", "mixed"] as const),
      qualityScore: Math.round(random() * 100) / 100,
      createdAt: now - (1_000 - i) * 60_000,
      source: "heuristic",
      trigger: "idle"
    }
  })
}

/** A 200-message burst: questions, answers, tool calls (one in eight failing), thanks and complaints. */
const makeBurst = (): ReadonlyArray<Message> => {
  const random = seeded(15_003)
  const out: Array<Message> = []
  for (let i = 0; out.length < 200; i++) {
    const [a, b] = words(random, 2)
    const said = i % 9 === 4 ? `That's wrong, the ${a} still fails.` : i % 7 === 6 ? "Thanks, that works now." : `How do I set up ${a} with ${b} on the server?`
    out.push({ role: "user", content: said })
    if (i % 2 === 0) {
      const id = `call_${i}`
      out.push({ role: "assistant", content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id, name: pick(random, ["bash", "read", "webfetch"]), input: { q: a ?? "" } }] })
      out.push({ role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content: i % 8 === 0 ? "Error: exit 1" : `ok: ${b}`, ...(i % 8 === 0 ? { is_error: true } : {}) }] })
    }
    out.push({ role: "assistant", content: `Edit the ${a} configuration, restart ${b}, then check the logs.` })
  }
  return out.slice(0, 200)
}

const us = (milliseconds: number): string => {
  const x = milliseconds * 1000
  return !Number.isFinite(x) ? "–" : x < 10 ? x.toFixed(1) : x.toFixed(0)
}
const usRow = (label: string, s: Summary, floor: number): Array<string> => [label, us(s.mean), us(s.p50), us(s.p95), ratio(s.p50, floor)]

/** The learning layers over the real stores, on `home` and its anna.db (migrated by Sqlite.layer). */
const learningStack = (home: string) =>
  Compose.learning.pipe(
    Layer.provideMerge(SdkProviderRegistry.layer()),
    Layer.provideMerge(Layer.merge(SessionLocks.layer, SqliteMemoryStore.layer)),
    Layer.provideMerge(SqliteConfigStore.layerWithStores(home)),
    Layer.provideMerge(AppConfig.at(home)),
    Layer.provideMerge(Sqlite.layer(join(home, "anna.db"))),
    // Quiet: nothing should warn here, and a warning per turn would flood the output.
    Layer.provideMerge(Logger.layer([]))
  )

const writeRules = (path: string, rules: ReadonlyArray<PlaybookRule>) => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, stringifyPlaybook(rules))
}

/** The floor of a playbook write: the same bytes to a temp file, fsync, rename over the target. */
const plainWrite = (path: string, text: string) => {
  const temp = `${path}.floor.tmp`
  const fd = openSync(temp, "w", 0o600)
  try {
    writeFileSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temp, path)
}

export const runLearning = async (dir: string): Promise<void> => {
  const loadBefore = loadavg()[0] ?? Number.NaN
  const home = join(dir, "learning-home")
  mkdirSync(home, { recursive: true })
  const runtime = ManagedRuntime.make(learningStack(home))
  const now = Date.now()
  try {
    // ---- Setup: provider, agent, the two playbook files, the diary.
    progress("learning: seeding the agent, 2 × 200 playbook rules, 1,000 diary entries")
    const agentRules = makeRules("agent", 200, 15_000, now)
    const globalRules = makeRules("global", 200, 15_001, now)
    const bigRules = makeRules("big", 1_000, 15_004, now)
    const entries = makeEntries(now)
    await runtime.runPromise(Effect.gen(function*() {
      yield* (yield* ProviderStore).add({
        id: "local", type: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-bench", models: [], defaultModel: "fake-large", headers: {}, enabled: true
      })
      yield* (yield* AgentStore).create(AGENT, { providerId: "local" })
      const playbook = yield* Playbook
      const paths = playbook.paths(AGENT)
      writeRules(paths.agent ?? "", agentRules)
      writeRules(paths.global, globalRules)
      writeRules(playbook.paths(BIG_AGENT).agent ?? "", bigRules)
      const diary = yield* Diary
      for (const e of entries) yield* diary.add(e)
    }))

    // ---- 1. beforeTurn and its steps.
    progress("learning: Learning.beforeTurn and its steps")
    const turn = await runtime.runPromise(Effect.gen(function*() {
      const learning = yield* Learning
      const playbook = yield* Playbook
      const diary = yield* Diary
      const plugins = yield* PluginStore
      const sql = yield* SqlClient.SqlClient
      const paths = playbook.paths(AGENT)
      const text = yield* learning.beforeTurn(CHAT, MESSAGE)
      if (text === "") throw new Error("learning: beforeTurn chose no rule; the bench's data is wrong")
      const known = yield* playbook.tags(AGENT)
      const recent = yield* diary.list({ sessionKey: SESSION, limit: RECENT_ENTRIES_FOR_TAGS })
      const tags = conversationTags(MESSAGE, known, recent.flatMap((e) => e.tags))
      const query = { agentId: AGENT, userId: USER, tags }
      const context = yield* playbook.context(query)
      const visible = (yield* playbook.list(AGENT)).map((s) => s.rule).filter((r) => r.user === undefined || r.user === USER)
      const chosen = [...context.rules, ...context.antiPatterns]
      const uses = chosen.map((s) => ({ sessionKey: SESSION, agentId: AGENT, userId: USER, kind: "rule" as const, ref: s.rule.id, scope: "", at: now }))
      const cases: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
        ["Learning.beforeTurn, plugin on (the whole step)", learning.beforeTurn(CHAT, MESSAGE)],
        ["· plugin check: PluginStore.enabledFor", plugins.enabledFor(PLUGIN_ID, AGENT)],
        ["· Playbook.tags: lstat of both files, cached rules, tag set", playbook.tags(AGENT)],
        ["· Diary.list: the session's 3 latest entries' tags", diary.list({ sessionKey: SESSION, limit: RECENT_ENTRIES_FOR_TAGS })],
        ["· Playbook.context: list again, select, format", playbook.context(query)],
        [`· Diary.recordUses of the ${chosen.length} rules chosen`, diary.recordUses(uses)],
        ["floor: lstat of the two files (fs.promises)", Effect.promise(() => Promise.all([fs.lstat(paths.agent ?? ""), fs.lstat(paths.global)]))],
        ["floor: pure selectRules + formatForPrompt, same rules", Effect.sync(() => formatForPrompt(selectRules(visible, tags, Date.now())))],
        ["floor: `SELECT 1` through the same SqlClient", sql`SELECT 1`]
      ]
      const figures: Array<readonly [string, Summary]> = []
      for (const [label, effect] of cases) figures.push([label, yield* sampleEffect(READS, () => effect)])
      // After a reflection or feedback wrote the agent's file, the next turn reads and parses it again.
      const agentText = stringifyPlaybook(agentRules)
      const afterWrite: Array<number> = []
      for (let i = 0; i < FILES.warmup + FILES.min; i++) {
        plainWrite(paths.agent ?? "", agentText)
        const t0 = performance.now()
        yield* learning.beforeTurn(CHAT, MESSAGE)
        if (i >= FILES.warmup) afterWrite.push(performance.now() - t0)
      }
      figures.push(["Learning.beforeTurn, first turn after the agent's file was rewritten", summarize(afterWrite)])
      figures.push(["· parsePlaybook of that 200-rule file alone", sampleSync(FILES, () => parsePlaybook(agentText, "agent.yaml"))])
      yield* plugins.setFor(PLUGIN_ID, AGENT, false)
      const off = yield* sampleEffect(READS, () => learning.beforeTurn(CHAT, MESSAGE))
      if ((yield* learning.beforeTurn(CHAT, MESSAGE)) !== "") throw new Error("learning: beforeTurn injected rules with the plugin off")
      yield* plugins.setFor(PLUGIN_ID, AGENT, undefined)
      return { figures, off, tags, chosen: chosen.length, tokens: context.tokenCount, visible: visible.length, textChars: text.length }
    }))
    const figure = (prefix: string) => turn.figures.find(([label]) => label.startsWith(prefix))?.[1] ?? summarize([])
    const select1 = figure("floor: `SELECT 1`").p50
    const pure = figure("floor: pure").p50
    const whole = figure("Learning.beforeTurn, plugin on")
    section(
      "Learning.beforeTurn, on every turn before the model call (agent and global playbooks of 200 rules each)",
      table(["step", "mean (µs)", "p50 (µs)", "p95 (µs)", "p50 / SELECT 1"], [
        ...turn.figures.map(([label, s]) => usRow(label, s, select1)),
        usRow("Learning.beforeTurn, plugin `learning` off", turn.off, select1)
      ]),
      `${int(READS.min)} calls after ${READS.warmup} untimed, one at a time. Compose.learning on the real stores (SQLite file, YAML files in a\n` +
        `temporary $ANNA_HOME). Rules: 2–4 tags each from ${VOCABULARY.length} words, 1 in 10 an anti-pattern, 1 in 7 scoped to another user\n` +
        `(${turn.visible} of the 400 visible to this user). Diary: 1,000 entries, 100 of this session. The message has 5 vocabulary words;\n` +
        `with the 3 latest entries' tags the turn's tags are ${turn.tags.length} (${turn.tags.join(", ")}). Chosen: ${turn.chosen} rules,\n` +
        `${turn.tokens} tokens, a section of ${int(turn.textChars)} characters. Each whole call also records its ${turn.chosen} uses (one INSERT).\n` +
        `beforeTurn p50 / pure selection p50: ${ratio(whole.p50, pure)}. "After the file was rewritten": the same bytes written to a temp file\n` +
        `and renamed over it (new identity) before each of ${FILES.min} calls (${FILES.warmup} untimed), as a reflection's or feedback's write does.`
    )
    ratios.push({ operation: "Learning.beforeTurn (2 × 200 rules, 1,000 entries)", ours: `${us(whole.p50)} µs`, floor: `${us(select1)} µs (SELECT 1)`, ratio: ratio(whole.p50, select1) })
    ratios.push({ operation: "Learning.beforeTurn vs pure selection", ours: `${us(whole.p50)} µs`, floor: `${us(pure)} µs (selectRules + format)`, ratio: ratio(whole.p50, pure) })

    // ---- 2. Pure selection.
    progress("learning: selectRules over 100 / 1,000 rules")
    const selection = [100, 1_000].map((n) => {
      const rules = makeRules("pure", n, 15_005, now)
      const s = sampleSync(PURE, () => selectRules(rules, turn.tags, now))
      const picked = selectRules(rules, turn.tags, now)
      return [int(n), us(s.mean), us(s.p50), us(s.p95), (s.p50 * 1000 / n).toFixed(2), String(picked.rules.length + picked.antiPatterns.length)]
    })
    section(
      "selectRules alone (pure: score, sort, budget)",
      table(["rules", "mean (µs)", "p50 (µs)", "p95 (µs)", "p50 per rule (µs)", "chosen"], selection),
      `${int(PURE.min)} calls after ${PURE.warmup}; the same ${turn.tags.length} tags as the turn above; every rule visible.`
    )

    // ---- 3. The YAML file.
    progress("learning: the 1,000-rule playbook file: parse, stringify, feedback")
    const bigText = stringifyPlaybook(bigRules)
    const parse = sampleSync(FILES, () => parsePlaybook(bigText, "bench.yaml"))
    const stringify = sampleSync(FILES, () => stringifyPlaybook(bigRules))
    const bigPath = join(home, "workspaces", BIG_AGENT, "playbook.yaml")
    const feedback = await runtime.runPromise(Effect.gen(function*() {
      const playbook = yield* Playbook
      return yield* sampleEffect(FILES, (i) => playbook.feedback(BIG_AGENT, ["big-0500"], i % 2 === 0 ? "success" : "failure", "operator"))
    }))
    const floorPath = join(home, "floor-playbook.yaml")
    const write = sampleSync(FILES, () => plainWrite(floorPath, bigText))
    const fileRows = [
      ["parsePlaybook (text → rules)", parse],
      ["stringifyPlaybook (rules → text)", stringify],
      ["Playbook.feedback on 1 rule (read, change, atomic write)", feedback],
      ["floor: writeFileSync + fsync + rename of the same bytes", write]
    ] as const
    section(
      `The playbook file: 1,000 rules, ${(Buffer.byteLength(bigText) / 1024).toFixed(0)} KiB of YAML`,
      table(["operation", "mean (ms)", "p50 (ms)", "p95 (ms)", "p50 / write floor"], fileRows.map(([label, s]) => [label, ms(s.mean), ms(s.p50), ms(s.p95), ratio(s.p50, write.p50)])),
      `${FILES.min} runs after ${FILES.warmup}. Feedback alternates success and failure on rule big-0500 of ${bigPath.replace(home, "$ANNA_HOME")}:\n` +
        "the file changed since the last read (the previous write), so each call parses it again, then stringifies and writes it\n" +
        "(temp file, fsync, identity check, rename, folder fsync). parse + stringify + floor p50s: " +
        `${ms(parse.p50 + stringify.p50 + write.p50)} ms.`
    )
    ratios.push({ operation: "Playbook.feedback, 1,000-rule file", ours: `${ms(feedback.p50)} ms`, floor: `${ms(write.p50)} ms (write + fsync + rename)`, ratio: ratio(feedback.p50, write.p50) })

    // ---- 4. Reflection bookkeeping without the model.
    progress("learning: heuristicEntry and Diary.settleUses")
    const burst = makeBurst()
    const heuristic = sampleSync(PURE, () => heuristicEntry(burst))
    const wordsFloor = sampleSync(PURE, () =>
      burst.reduce((n, m) => n + (typeof m.content === "string" ? m.content : JSON.stringify(m.content)).toLowerCase().split(/\W+/).length, 0))
    const entry = heuristicEntry(burst)
    const settle = await runtime.runPromise(Effect.gen(function*() {
      const diary = yield* Diary
      const sql = yield* SqlClient.SqlClient
      const key = `${AGENT}:cli:u9:settle`
      const fifty = Array.from({ length: 50 }, (_, i) => ({ sessionKey: key, agentId: AGENT, userId: "u9", kind: "rule" as const, ref: `agent-${String(i).padStart(4, "0")}`, scope: "", at: now }))
      // Only the settling is timed: the 50 uses are recorded before each sample.
      const timed = (f: (i: number) => Effect.Effect<unknown, unknown>) =>
        Effect.gen(function*() {
          const times: Array<number> = []
          for (let i = 0; i < 20 + 500; i++) {
            yield* diary.recordUses(fifty)
            const t0 = performance.now()
            const out = yield* f(i)
            if (i >= 20) times.push(performance.now() - t0)
            if (Array.isArray(out) && out.length !== 50) throw new Error(`learning: settled ${out.length} uses, not 50`)
          }
          return summarize(times)
        })
      return {
        ours: yield* timed((i) => diary.settleUses(key, `diary_bench_settle_${i}`)),
        floor: yield* timed((i) => sql`UPDATE burst_uses SET settled_by = ${`floor_${i}`} WHERE session_key = ${key} AND settled_by IS NULL
          RETURNING id, session_key, agent_id, user_id, kind, ref, scope, at`)
      }
    }))
    section(
      "Reflection bookkeeping without the model",
      table(["operation", "mean (µs)", "p50 (µs)", "p95 (µs)", "p50 / floor", "floor"], [
        [`heuristicEntry, ${burst.length}-message burst`, us(heuristic.mean), us(heuristic.p50), us(heuristic.p95), ratio(heuristic.p50, wordsFloor.p50), `lowercase + split every message: ${us(wordsFloor.p50)} µs`],
        ["Diary.settleUses, 50 open uses", us(settle.ours.mean), us(settle.ours.p50), us(settle.ours.p95), ratio(settle.ours.p50, settle.floor.p50), `same UPDATE … RETURNING, rows not decoded: ${us(settle.floor.p50)} µs`]
      ]),
      `heuristicEntry: ${int(PURE.min)} calls after ${PURE.warmup}; the burst has tool calls (1 in 8 failing), thanks and complaints; it read\n` +
        `status ${entry.status}, quality ${entry.qualityScore}, tags ${entry.tags.join(", ")}. settleUses: 500 after 20, each on 50 uses recorded just before (untimed).`
    )

    // ---- 5. Thompson ranking.
    progress("learning: ranking 100 skills")
    const random = seeded(15_006)
    const skills = Array.from({ length: 100 }, (_, i): { readonly name: string; readonly arm: Arm } => ({
      name: `skill-${i}`,
      arm: { successes: Math.floor(random() * 40), failures: Math.floor(random() * 15) }
    }))
    const sample = sampleSync(PURE, () => rank(skills, (s) => s.arm, "sample", Math.random))
    const byMean = sampleSync(PURE, () => rank(skills, (s) => s.arm, "mean", Math.random))
    section(
      "Skills ranked: Thompson sampling of 100 skills against ranking by mean",
      table(["ranking", "mean (µs)", "p50 (µs)", "p95 (µs)", "p50 / mean ranking"], [
        ["rank(…, \"sample\"): one Beta draw per skill", us(sample.mean), us(sample.p50), us(sample.p95), ratio(sample.p50, byMean.p50)],
        ["floor: rank(…, \"mean\")", us(byMean.mean), us(byMean.p50), us(byMean.p95), "1.0×"]
      ]),
      `${int(PURE.min)} rankings after ${PURE.warmup}; successes 0–39, failures 0–14 per skill; Math.random as the source.`
    )
    ratios.push({ operation: "Thompson ranking of 100 skills", ours: `${us(sample.p50)} µs`, floor: `${us(byMean.p50)} µs (by mean)`, ratio: ratio(sample.p50, byMean.p50) })
  } finally {
    await runtime.dispose()
  }
  const loadAfter = loadavg()[0] ?? Number.NaN
  print(`\nLoad average (1 min) ${loadBefore.toFixed(2)} as the learning phase began, ${loadAfter.toFixed(2)} as it ended (${cpus().length} cores).`)
}
