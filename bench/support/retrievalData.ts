/**
 * The retrieval evaluation's dataset: several users, each with several sessions of everyday chat
 * (bench/support/chatter.ts) in which facts are planted (facts.ts, factsMore.ts), and the questions
 * about them with the seqs of the messages that answer them (the evidence). Deterministic: one seed,
 * one dataset.
 *
 * Every question is checked against its evidence (`checkQuestion`) before it is kept:
 * - a question meant to be fair must share at least one content word with the evidence as the
 *   engine's own porter tokenizer sees it (an FTS5 table with the same tokenizer as migrations/),
 *   or, with CJK text, a two-character Chinese word or an ASCII token found in the evidence text;
 *   question words, auxiliaries, pronouns and chat fillers ("remember", "again", 什么, 哪天 …) do
 *   not count;
 * - a question meant to be hard must share no content word (it goes to the separate hard slice);
 * - no question may copy its evidence: no run of four words (after light stemming) and no run of
 *   five Chinese characters in common.
 * Questions that fail are dropped and counted, so the report says how many there were.
 *
 * In half of each user's sessions (the odd ones, the fully compacted one among them) the model has
 * already searched its memory for the questions asked there (issue 24): after the fact, one to three lookups of a question — the user asking for it
 * again in words of no topic, the assistant calling the memory tool with the question (or its
 * content words) as the query, the tool's result quoting the evidence the way search snippets do
 * (or finding nothing), and an answer of no topic. Those calls and results hold every query word: a
 * search that reads them finds them first. The dataset lists their seqs (`memoryCalls`).
 */
import { DatabaseSync } from "node:sqlite"
import { type SessionRef, sessionRefFromKey } from "../../src/domain/memory/session.ts"
import { messageText, type NewMessage } from "../../src/domain/message.ts"
import { between, makeFiller, pick, type Rand, shuffle, type World } from "./chatter.ts"
import { type Category, EVENTS, FACT_POOLS, type Gen, PEOPLE, PLACES, PREFERENCES, type Template, type Turn } from "./facts.ts"
import { CHINESE, MIXED, TOOLS } from "./factsMore.ts"
import { prng } from "./transcript.ts"

export interface Question {
  readonly text: string
  readonly category: Category
  readonly template: string
  /** No content word in common with the evidence (reported apart). */
  readonly hard: boolean
  readonly userId: string
  readonly sessionKey: string
  /** Seqs (1-based positions in the session) of the messages that answer the question. */
  readonly evidence: ReadonlyArray<number>
  /** Content words (or Chinese words, ASCII tokens) in common with the evidence. */
  readonly shared: ReadonlyArray<string>
  /** Memory searches for this question made earlier in its session (0 in sessions without lookups). */
  readonly searchedBefore: number
}

export interface SessionData {
  readonly ref: SessionRef
  readonly messages: ReadonlyArray<NewMessage>
}

export interface Dataset {
  readonly sessions: ReadonlyArray<SessionData>
  readonly questions: ReadonlyArray<Question>
  readonly facts: number
  readonly distractors: number
  /** The memory tool's calls and results of the earlier lookups, by session. */
  readonly memoryCalls: ReadonlyMap<string, ReadonlySet<number>>
  /** Candidate questions dropped by the checks: meant fair but sharing nothing, meant hard but sharing a word, copies. */
  readonly dropped: { readonly unfair: number; readonly notHard: number; readonly copies: number }
}

export interface DatasetOptions {
  readonly seed: number
  readonly users: number
  readonly sessionsPerUser: number
  /** Everyday exchanges per session (2 to 4 messages each). */
  readonly fillerExchanges: number
}

/** Facts per user from each category's templates (each template at most once per user). */
const PER_USER: ReadonlyArray<readonly [ReadonlyArray<Template>, number]> = [
  [PEOPLE, 4],
  [PLACES, 5],
  [PREFERENCES, 5],
  [EVENTS, 5],
  [TOOLS, 5],
  [CHINESE, 5],
  [MIXED, 4]
]

const LEAD_INS = ["By the way, ", "Quick update: ", "Oh, and ", "Random thing: ", "Not urgent, but "]

/** A user asking for something again, and the assistant's answer after its lookup: no topic words. */
const LOOKUP_ASKS = ["Can you check that for me?", "Hmm, what was it again?", "Remind me?", "Do you still have that?", "Wait, tell me again."]
const LOOKUP_REPLIES = ["Found it.", "Here you go.", "That's what I have.", "I couldn't find more than that."]

/** An earlier memory search for one of a fact block's questions, placed after the fact. */
interface Lookup {
  readonly block: Block
  readonly question: string
}
/** Sentence starts that are lower-cased after a lead-in (names and "I" keep their capital). */
const LOWER_AFTER_LEAD = /^(My|The|We|We're|We've|Our|Please|Turns|Big|Booked|Did|Handover|Note|Signed|Meet|Dentist|On)\b/

interface Block {
  readonly turns: ReadonlyArray<Turn>
  readonly questions: ReadonlyArray<{ readonly text: string; readonly hard: boolean }>
  readonly category: Category
  readonly template: string
}

/** A user's people, cities and projects: their facts draw on these first, and the filler mentions them all along. */
const makeWorld = (rand: Rand): World => ({
  names: shuffle(rand, FACT_POOLS.name).slice(0, 14),
  cities: shuffle(rand, FACT_POOLS.city).slice(0, 10),
  projects: shuffle(rand, FACT_POOLS.proj).slice(0, 7)
})

const makeGen = (rand: Rand, seed: number, world: World, filler: ReturnType<typeof makeFiller>): Gen => {
  const used = new Map<string, Set<string>>()
  let toolIds = 0
  const worldPool = (pool: keyof typeof FACT_POOLS) =>
    pool === "name" ? world.names : pool === "city" ? world.cities : pool === "proj" ? world.projects : []
  return {
    rand,
    pick: (xs) => pick(rand, xs),
    num: (lo, hi) => between(rand, lo, hi),
    // Never the same value twice for one user (two facts about one thing would make a question
    // ambiguous); the user's world first, the whole pool once the world is used up.
    take: (pool) => {
      const seen = used.get(pool) ?? new Set<string>()
      used.set(pool, seen)
      const own = worldPool(pool).filter((x) => !seen.has(x))
      const x = pick(rand, own.length > 0 ? own : FACT_POOLS[pool].filter((y) => !seen.has(y)))
      seen.add(x)
      return x
    },
    pad: (sentence) => {
      const before = rand() < 0.35 ? `${filler.sentence()} ` : ""
      const lead = before === "" && rand() < 0.3 ? pick(rand, LEAD_INS) : ""
      const body = lead !== "" && LOWER_AFTER_LEAD.test(sentence) ? sentence.charAt(0).toLowerCase() + sentence.slice(1) : sentence
      const after = rand() < 0.25 ? ` ${filler.sentence()}` : ""
      return `${before}${lead}${body}${after}`
    },
    ack: filler.ack,
    toolId: () => `toolu_r${seed}_${++toolIds}`
  }
}

/** Builds the whole dataset; throws only on a bug (never on an unlucky draw). */
export const makeDataset = (options: DatasetOptions): Dataset => {
  const sessions: Array<SessionData> = []
  const questions: Array<Question> = []
  const memoryCalls = new Map<string, Set<number>>()
  const checker = makeChecker()
  let facts = 0
  let distractors = 0
  for (let u = 0; u < options.users; u++) {
    const rand = prng(options.seed * 1_000 + u)
    const world = makeWorld(rand)
    const filler = makeFiller(rand, world, { seed: options.seed * 1_000 + u, chineseRate: 0.1, toolRate: 0.12, worldRate: 0.3 })
    const g = makeGen(rand, options.seed * 1_000 + u, world, filler)
    const perSession: Array<Array<Block>> = Array.from({ length: options.sessionsPerUser }, () => [])
    const chosen = PER_USER.flatMap(([templates, n]) => shuffle(rand, templates).slice(0, n))
    shuffle(rand, chosen).forEach((t, i) => {
      const planted = t.make(g)
      facts++
      const k = Math.min(planted.questions.length, 1 + (rand() < 0.6 ? 1 : 0) + (rand() < 0.25 ? 1 : 0))
      const asked = shuffle(rand, planted.questions).slice(0, k).map((text) => ({ text, hard: false }))
      if (planted.hard !== undefined && planted.hard.length > 0 && rand() < 0.45) asked.push({ text: pick(rand, planted.hard), hard: true })
      perSession[i % options.sessionsPerUser]?.push({ turns: planted.turns, questions: asked, category: t.category, template: t.id })
      // Most of the talk about a topic happens around the same time (the fact's session), some later.
      for (const d of planted.distractors ?? []) {
        if (rand() >= 0.7) continue
        distractors++
        const s = rand() < 0.6 ? i % options.sessionsPerUser : Math.floor(rand() * options.sessionsPerUser)
        perSession[s]?.push({ turns: [{ message: { role: "user", content: d }, evidence: false }, { message: { role: "assistant", content: filler.reply() }, evidence: false }], questions: [], category: t.category, template: "distractor" })
      }
    })
    // Lookups draw from a generator of their own, so the rest of the dataset is the one it was without them.
    const lookupRand = prng(options.seed * 1_000 + u + 500_000)
    let lookupIds = 0
    for (let s = 0; s < options.sessionsPerUser; s++) {
      const ref = sessionRefFromKey(`retrieval:cli:u${u}:s${s}`)
      const facts = (perSession[s] ?? []).map((b) => ({ b, slot: Math.floor(rand() * options.fillerExchanges) }))
      const lookups: Array<{ readonly lookup: Lookup; readonly slot: number }> = s % 2 === 1
        ? facts.flatMap(({ b, slot }) =>
          b.questions.filter(() => lookupRand() < 0.8).flatMap((q) =>
            Array.from({ length: 1 + Math.floor(lookupRand() * 3) }, () => ({
              lookup: { block: b, question: q.text },
              slot: slot + 1 + Math.floor(lookupRand() * Math.max(1, options.fillerExchanges - slot))
            }))
          )
        )
        : []
      const blocks = [...facts, ...lookups.map((l) => ({ b: l.lookup, slot: l.slot }))]
      // Stable: a lookup in the slot of its fact comes after it.
      blocks.sort((x, y) => x.slot - y.slot)
      const pushed = new Map<Block, { readonly evidence: ReadonlyArray<number>; readonly texts: ReadonlyArray<string> }>()
      const searchedBefore = new Map<string, number>()
      const calls = new Set<number>()
      const messages: Array<NewMessage> = []
      let now = Date.UTC(2026, 0, 5) + (u * options.sessionsPerUser + s) * 4 * 86_400_000
      const push = (m: NewMessage) => {
        now += 20_000 + Math.floor(rand() * 220_000)
        messages.push({ ...m, createdAt: now })
      }
      let next = 0
      for (let e = 0; e <= options.fillerExchanges; e++) {
        for (; next < blocks.length && (blocks[next]?.slot ?? 0) <= e; next++) {
          const entry = blocks[next]?.b
          if (entry === undefined) continue
          if ("block" in entry) {
            const fact = pushed.get(entry.block)
            if (fact === undefined) continue
            const id = `toolu_lookup${options.seed}_${u}_${++lookupIds}`
            const words = orTerms(entry.question).split(" OR ").join(" ")
            const query = lookupRand() < 0.6 || words === "" ? entry.question : words
            const day = new Date(Date.UTC(2026, 0, 5)).toISOString().slice(0, 16).replace("T", " ")
            const result = lookupRand() < 0.2
              ? `No matches for ${JSON.stringify(query)}.`
              : fact.evidence.map((seq, i) => `msg_${seq} [message, ${day}] ${fact.texts[i] ?? ""}`).join("\n")
            push({ role: "user", content: pick(lookupRand, LOOKUP_ASKS) })
            push({ role: "assistant", content: [{ type: "text", text: "Let me search my memory." }, { type: "tool_use", id, name: "memory", input: { action: "search", query } }] })
            calls.add(messages.length)
            push({ role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content: result }] })
            calls.add(messages.length)
            push({ role: "assistant", content: pick(lookupRand, LOOKUP_REPLIES) })
            searchedBefore.set(entry.question, (searchedBefore.get(entry.question) ?? 0) + 1)
            continue
          }
          const block = entry
          const first = messages.length + 1
          const evidence = block.turns.flatMap((t, i) => (t.evidence ? [first + i] : []))
          for (const t of block.turns) push(t.message)
          const evidenceText = block.turns.filter((t) => t.evidence).map((t) => messageText(t.message))
          pushed.set(block, { evidence, texts: evidenceText })
          for (const q of block.questions) {
            const shared = checker.check(q.text, evidenceText, q.hard)
            if (shared === null) continue
            questions.push({ text: q.text, category: block.category, template: block.template, hard: q.hard, userId: ref.userId, sessionKey: ref.key, evidence, shared, searchedBefore: 0 })
          }
        }
        if (e < options.fillerExchanges) for (const m of filler.exchange()) push(m)
      }
      sessions.push({ ref, messages })
      if (calls.size > 0) memoryCalls.set(ref.key, calls)
      for (const [i, q] of questions.entries()) {
        const n = q.sessionKey === ref.key ? searchedBefore.get(q.text) : undefined
        if (n !== undefined) questions[i] = { ...q, searchedBefore: n }
      }
    }
  }
  checker.close()
  return { sessions, questions, facts, distractors, memoryCalls, dropped: checker.dropped }
}

/** Words that carry no topic in a question: question words, auxiliaries, pronouns, chat fillers. */
const STOP = new Set(
  ("a an the and or but if of to in on at for with from by about as into over after before is are was were be been being am " +
    "do does did done have has had will would can could should shall might must i me my mine we us our ours you your yours " +
    "he him his she her they them their it its this that these those what which who whom whose when where why how there here " +
    "again remember recall know tell told say said ever any anything something some much many now then still just also please " +
    "hey quick question remind so okay ok oh well yet not no yes up out get got go going went gone really time day days date " +
    "lately moment end thing things s t re ve ll d")
    .split(" ")
)
/** Chinese characters that make up question words and function words (什么, 哪天, 来着, 我的 …). */
const ZH_FUNCTION = new Set([..."我你他她它们的了吗呢吧是在有和跟与什么么时候哪个天里多少怎样来着记得还一下这那就都也要去给把被对说问请帮谁"])

const HAN = /\p{Script=Han}/u

/**
 * The reference query of the evaluation (not an engine): the question's content words joined with
 * OR, for strict mode: Latin words minus the stop list above, and each Chinese run as its two-character
 * pieces without function characters. What plain bm25 over OR-ed keywords finds, with today's engine.
 */
export const orTerms = (question: string): string => {
  const terms = new Set<string>()
  for (const w of latinWords(question)) if (!STOP.has(w) && (w.length >= 2 || /\d/.test(w))) terms.add(w)
  for (const run of question.match(/\p{Script=Han}+/gu) ?? []) {
    const cs = [...run]
    for (let i = 0; i + 1 < cs.length; i++) {
      const pair = `${cs[i]}${cs[i + 1]}`
      if ([...pair].every((c) => !ZH_FUNCTION.has(c))) terms.add(pair)
    }
  }
  return [...terms].join(" OR ")
}
const latinWords = (text: string): Array<string> => (text.toLowerCase().match(/[a-z0-9\u00c0-\u024f]+/g) ?? [])
const stem = (w: string): string => w.replace(/'s$/, "").replace(/(ing|ed|es|s)$/, (m) => (w.length > m.length + 3 ? "" : m))

/** Longest run of Han characters that `a` and `b` have in common. */
const commonHanRun = (a: string, b: string): number => {
  let best = 0
  const xs = [...a]
  const ys = [...b]
  let prev = new Array<number>(ys.length + 1).fill(0)
  for (let i = 1; i <= xs.length; i++) {
    const row = new Array<number>(ys.length + 1).fill(0)
    for (let j = 1; j <= ys.length; j++) {
      const x = xs[i - 1] ?? ""
      if (x === ys[j - 1] && HAN.test(x)) {
        row[j] = (prev[j - 1] ?? 0) + 1
        best = Math.max(best, row[j] ?? 0)
      }
    }
    prev = row
  }
  return best
}

const makeChecker = () => {
  const db = new DatabaseSync(":memory:")
  db.exec("CREATE VIRTUAL TABLE ev USING fts5 (text, tokenize = 'porter unicode61 remove_diacritics 2')")
  const insert = db.prepare("INSERT INTO ev (rowid, text) VALUES (?, ?)")
  // The rowid is bound as a BigInt: node:sqlite binds every JS number as REAL, and FTS5 then ignores
  // the `rowid = ?` constraint next to MATCH (checked with SQLite 3.53.4) and matches every row.
  const match = db.prepare("SELECT 1 AS hit FROM ev WHERE ev MATCH ? AND rowid = ?")
  const dropped = { unfair: 0, notHard: 0, copies: 0 }
  let row = 0
  return {
    dropped,
    close: () => db.close(),
    /** The content words the question shares with its evidence, or null when the question is dropped. */
    check: (question: string, evidence: ReadonlyArray<string>, hard: boolean): ReadonlyArray<string> | null => {
      const text = evidence.join("\n")
      const lower = text.toLowerCase()
      insert.run(BigInt(++row), text)
      const shared = new Set<string>()
      for (const w of latinWords(question)) {
        if (STOP.has(w) || (w.length < 2 && !/\d/.test(w))) continue
        const viaPorter = match.get(`"${w}"`, BigInt(row)) !== undefined
        const viaSubstring = HAN.test(text) && (w.length >= 3 || /\d/.test(w)) && lower.includes(w)
        if (viaPorter || viaSubstring) shared.add(w)
      }
      const han = [...question]
      for (let i = 0; i + 1 < han.length; i++) {
        const pair = `${han[i]}${han[i + 1]}`
        if ([...pair].every((c) => HAN.test(c) && !ZH_FUNCTION.has(c)) && text.includes(pair)) shared.add(pair)
      }
      const qWords = latinWords(question).map(stem)
      const eWords = ` ${latinWords(text).map(stem).join(" ")} `
      const copies = qWords.some((_, i) => i + 4 <= qWords.length && eWords.includes(` ${qWords.slice(i, i + 4).join(" ")} `)) ||
        evidence.some((e) => commonHanRun(question, e) >= 5)
      if (process.env["RETRIEVAL_DEBUG"] === "1" && (copies || (!hard && shared.size === 0) || (hard && shared.size > 0))) {
        console.error(`drop (${copies ? "copy" : hard ? "not hard" : "unfair"}): ${question} [${[...shared].join(",")}] <- ${text.slice(0, 160)}`)
      }
      if (copies) dropped.copies++
      else if (!hard && shared.size === 0) dropped.unfair++
      else if (hard && shared.size > 0) dropped.notHard++
      else return [...shared]
      return null
    }
  }
}
