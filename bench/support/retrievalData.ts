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
 * - a context-dependent question (issue 25, factsContext.ts) must share no content word with its
 *   evidence turn and at least one with the fact's turns at ±1..±2 of it, and copy neither;
 * - a multi-hop question is checked against all its evidence turns together, two at least.
 * Questions that fail are dropped and counted, so the report says how many there were.
 *
 * Issue 25's facts (context, context (Chinese), multi-hop) draw on a generator of their own, after
 * the others (`PER_USER_CONTEXT`), and so do their slots, timestamps and lookups: the facts, filler,
 * questions and lookups of issue 11's kinds are the ones they were, only with more messages around.
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
import { CONTEXT, CONTEXT_ZH, MULTI_HOP } from "./factsContext.ts"
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
  /** Context kinds: the content words in common with the turns at ±1..±2 of the evidence (none with the evidence). */
  readonly neighbourShared: ReadonlyArray<string>
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
  readonly dropped: Dropped
}

export interface Dropped {
  readonly unfair: number
  readonly notHard: number
  readonly copies: number
  /** Context kinds: a question sharing a content word with its evidence turn itself. */
  readonly leaks: number
  /** Context kinds: a question sharing no content word with the turns around its evidence. */
  readonly noNeighbour: number
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
/** Facts per user of issue 25's kinds, drawn after the others from a generator of their own. */
const PER_USER_CONTEXT: ReadonlyArray<readonly [ReadonlyArray<Template>, number]> = [
  [CONTEXT, 8],
  [CONTEXT_ZH, 4],
  [MULTI_HOP, 5]
]

const LEAD_INS = ["By the way, ", "Quick update: ", "Oh, and ", "Random thing: ", "Not urgent, but "]

/** A user asking for something again, and the assistant's answer after its lookup: no topic words. */
const LOOKUP_ASKS = ["Can you check that for me?", "Hmm, what was it again?", "Remind me?", "Do you still have that?", "Wait, tell me again."]
const LOOKUP_REPLIES = ["Found it.", "Here you go.", "That's what I have.", "I couldn't find more than that."]

/** An earlier memory search for one of a fact block's questions, placed after the fact. */
interface Lookup {
  readonly block: Block
  readonly question: string
  /** The generator of the lookup's wording (the old kinds' or issue 25's). */
  readonly rand: Rand
}
/** Sentence starts that are lower-cased after a lead-in (names and "I" keep their capital). */
const LOWER_AFTER_LEAD = /^(My|The|We|We're|We've|Our|Please|Turns|Big|Booked|Did|Handover|Note|Signed|Meet|Dentist|On)\b/

interface Block {
  readonly turns: ReadonlyArray<Turn>
  /** Multi-hop: the first part, told earlier (its evidence is this block's too). */
  readonly before?: Block
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

const makeGen = (
  rand: Rand,
  seed: number,
  world: World,
  filler: ReturnType<typeof makeFiller>,
  used: Map<string, Set<string>>
): Gen => {
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
    const used = new Map<string, Set<string>>()
    const g = makeGen(rand, options.seed * 1_000 + u, world, filler, used)
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
        perSession[s]?.push(distractorBlock(d, filler.reply(), t.category))
      }
    })
    // Issue 25's kinds draw from a generator of their own (and take values the facts above left
    // over), so the facts, filler, order and lookups of the kinds above are the ones they were.
    const ctxSeed = options.seed * 1_000 + u + 900_000
    const ctxRand = prng(ctxSeed)
    const ctxFiller = makeFiller(ctxRand, world, { seed: ctxSeed, chineseRate: 0.1, toolRate: 0.12, worldRate: 0.3 })
    const cg = makeGen(ctxRand, ctxSeed, world, ctxFiller, used)
    const perSessionCtx: Array<Array<Block>> = Array.from({ length: options.sessionsPerUser }, () => [])
    const chosenCtx = PER_USER_CONTEXT.flatMap(([templates, n]) => shuffle(ctxRand, templates).slice(0, n))
    shuffle(ctxRand, chosenCtx).forEach((t, i) => {
      const planted = t.make(cg)
      facts++
      const k = Math.min(planted.questions.length, 1 + (ctxRand() < 0.6 ? 1 : 0))
      const asked = shuffle(ctxRand, planted.questions).slice(0, k).map((text) => ({ text, hard: false }))
      const own = perSessionCtx[i % options.sessionsPerUser]
      const first: Block = { turns: planted.turns, questions: planted.later === undefined ? asked : [], category: t.category, template: t.id }
      own?.push(first)
      if (planted.later !== undefined) own?.push({ turns: planted.later, before: first, questions: asked, category: t.category, template: t.id })
      for (const d of planted.distractors ?? []) {
        if (ctxRand() >= 0.7) continue
        distractors++
        const s = ctxRand() < 0.6 ? i % options.sessionsPerUser : Math.floor(ctxRand() * options.sessionsPerUser)
        perSessionCtx[s]?.push(distractorBlock(d, ctxFiller.reply(), t.category))
      }
    })
    // Lookups draw from a generator of their own, so the rest of the dataset is the one it was without them.
    const lookupRand = prng(options.seed * 1_000 + u + 500_000)
    const ctxLookupRand = prng(options.seed * 1_000 + u + 1_300_000)
    let lookupIds = 0
    for (let s = 0; s < options.sessionsPerUser; s++) {
      const ref = sessionRefFromKey(`retrieval:cli:u${u}:s${s}`)
      const facts: Array<Entry> = (perSession[s] ?? []).map((b) => ({ b, slot: Math.floor(rand() * options.fillerExchanges), time: rand }))
      const ctxFacts: Array<Entry> = []
      for (const b of perSessionCtx[s] ?? []) {
        // A multi-hop fact's second part comes 1 to 40 exchanges after its first.
        const first = b.before === undefined ? undefined : ctxFacts.find((f) => f.b === b.before)
        const slot = first === undefined
          ? Math.floor(ctxRand() * options.fillerExchanges)
          : Math.min(options.fillerExchanges, first.slot + 1 + Math.floor(ctxRand() * 40))
        ctxFacts.push({ b, slot, time: ctxRand })
      }
      const lookupsOf = (entries: ReadonlyArray<Entry>, lr: Rand, time: Rand): Array<Entry> =>
        s % 2 === 1
          ? entries.flatMap(({ b, slot }) =>
            "block" in b ? [] : b.questions.filter(() => lr() < 0.8).flatMap((q) =>
              Array.from({ length: 1 + Math.floor(lr() * 3) }, () => ({
                b: { block: b, question: q.text, rand: lr },
                slot: slot + 1 + Math.floor(lr() * Math.max(1, options.fillerExchanges - slot)),
                time
              }))
            )
          )
          : []
      // Stable: a lookup in the slot of its fact comes after it, a second part after its first.
      const blocks = [...facts, ...lookupsOf(facts, lookupRand, rand), ...ctxFacts, ...lookupsOf(ctxFacts, ctxLookupRand, ctxRand)]
      blocks.sort((x, y) => x.slot - y.slot)
      const pushed = new Map<Block, { readonly evidence: ReadonlyArray<number>; readonly texts: ReadonlyArray<string> }>()
      const searchedBefore = new Map<string, number>()
      const calls = new Set<number>()
      const messages: Array<NewMessage> = []
      let now = Date.UTC(2026, 0, 5) + (u * options.sessionsPerUser + s) * 4 * 86_400_000
      const push = (m: NewMessage, r: Rand = rand) => {
        now += 20_000 + Math.floor(r() * 220_000)
        messages.push({ ...m, createdAt: now })
      }
      let next = 0
      for (let e = 0; e <= options.fillerExchanges; e++) {
        for (; next < blocks.length && (blocks[next]?.slot ?? 0) <= e; next++) {
          const current = blocks[next]
          if (current === undefined) continue
          const { b: entry, time } = current
          if ("block" in entry) {
            const fact = pushed.get(entry.block)
            if (fact === undefined) continue
            const lr = entry.rand
            const id = `toolu_lookup${options.seed}_${u}_${++lookupIds}`
            const words = orTerms(entry.question).split(" OR ").join(" ")
            const query = lr() < 0.6 || words === "" ? entry.question : words
            const day = new Date(Date.UTC(2026, 0, 5)).toISOString().slice(0, 16).replace("T", " ")
            const result = lr() < 0.2
              ? `No matches for ${JSON.stringify(query)}.`
              : fact.evidence.map((seq, i) => `msg_${seq} [message, ${day}] ${fact.texts[i] ?? ""}`).join("\n")
            push({ role: "user", content: pick(lr, LOOKUP_ASKS) }, time)
            push({ role: "assistant", content: [{ type: "text", text: "Let me search my memory." }, { type: "tool_use", id, name: "memory", input: { action: "search", query } }] }, time)
            calls.add(messages.length)
            push({ role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content: result }] }, time)
            calls.add(messages.length)
            push({ role: "assistant", content: pick(lr, LOOKUP_REPLIES) }, time)
            searchedBefore.set(entry.question, (searchedBefore.get(entry.question) ?? 0) + 1)
            continue
          }
          const block = entry
          const start = messages.length + 1
          const earlier = block.before === undefined ? undefined : pushed.get(block.before)
          const own = block.turns.flatMap((t, i) => (t.evidence ? [start + i] : []))
          const evidence = [...(earlier?.evidence ?? []), ...own]
          for (const t of block.turns) push(t.message, time)
          const evidenceText = [...(earlier?.texts ?? []), ...block.turns.filter((t) => t.evidence).map((t) => messageText(t.message))]
          pushed.set(block, { evidence, texts: evidenceText })
          for (const q of block.questions) {
            const checked = checkQuestion(checker, q, block, evidenceText)
            if (checked === null) continue
            questions.push({
              text: q.text,
              category: block.category,
              template: block.template,
              hard: q.hard,
              userId: ref.userId,
              sessionKey: ref.key,
              evidence,
              shared: checked.shared,
              neighbourShared: checked.neighbourShared,
              searchedBefore: 0
            })
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

/** A block in a session's timeline, with the generator its timestamps draw on. */
interface Entry {
  readonly b: Block | Lookup
  readonly slot: number
  readonly time: Rand
}

const distractorBlock = (text: string, reply: string, category: Category): Block => ({
  turns: [{ message: { role: "user", content: text }, evidence: false }, { message: { role: "assistant", content: reply }, evidence: false }],
  questions: [],
  category,
  template: "distractor"
})

const isContext = (c: Category) => c === "context" || c === "context (Chinese)"

/**
 * The checks of one question (see the header): for the context kinds, against its evidence turn
 * and the block's turns at ±1..±2 of it; for multi-hop, against all its evidence turns (two at
 * least); otherwise against its evidence. Null when the question is dropped.
 */
export const checkQuestion = (
  checker: Checker,
  q: { readonly text: string; readonly hard: boolean },
  block: Block,
  evidenceText: ReadonlyArray<string>
): { readonly shared: ReadonlyArray<string>; readonly neighbourShared: ReadonlyArray<string> } | null => {
  if (isContext(block.category)) {
    const at = block.turns.findIndex((t) => t.evidence)
    const around = block.turns.filter((t, i) => !t.evidence && i !== at && Math.abs(i - at) <= 2).map((t) => messageText(t.message))
    const neighbourShared = checker.checkContext(q.text, evidenceText, around)
    return neighbourShared === null ? null : { shared: [], neighbourShared }
  }
  if (block.category === "multi-hop" && evidenceText.length < 2) throw new Error(`retrieval: multi-hop fact ${block.template} has one evidence turn`)
  const shared = checker.check(q.text, evidenceText, q.hard)
  return shared === null ? null : { shared, neighbourShared: [] }
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

export type Checker = ReturnType<typeof makeChecker>

export const makeChecker = () => {
  const db = new DatabaseSync(":memory:")
  db.exec("CREATE VIRTUAL TABLE ev USING fts5 (text, tokenize = 'porter unicode61 remove_diacritics 2')")
  const insert = db.prepare("INSERT INTO ev (rowid, text) VALUES (?, ?)")
  // The rowid is bound as a BigInt: node:sqlite binds every JS number as REAL, and FTS5 then ignores
  // the `rowid = ?` constraint next to MATCH (checked with SQLite 3.53.4) and matches every row.
  const match = db.prepare("SELECT 1 AS hit FROM ev WHERE ev MATCH ? AND rowid = ?")
  const dropped = { unfair: 0, notHard: 0, copies: 0, leaks: 0, noNeighbour: 0 }
  let row = 0
  /** The question's content words found in `text` (porter tokens, ASCII in CJK text, Chinese words). */
  const sharedWith = (question: string, text: string): Set<string> => {
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
    return shared
  }
  /** Four words (lightly stemmed) or five Chinese characters in a row in common with one of `texts`. */
  const copies = (question: string, texts: ReadonlyArray<string>): boolean => {
    const qWords = latinWords(question).map(stem)
    const eWords = ` ${latinWords(texts.join("\n")).map(stem).join(" ")} `
    return qWords.some((_, i) => i + 4 <= qWords.length && eWords.includes(` ${qWords.slice(i, i + 4).join(" ")} `)) ||
      texts.some((e) => commonHanRun(question, e) >= 5)
  }
  const debug = process.env["RETRIEVAL_DEBUG"] === "1"
  return {
    dropped,
    sharedWith,
    close: () => db.close(),
    /** The content words the question shares with its evidence, or null when the question is dropped. */
    check: (question: string, evidence: ReadonlyArray<string>, hard: boolean): ReadonlyArray<string> | null => {
      const text = evidence.join("\n")
      const shared = sharedWith(question, text)
      const copy = copies(question, evidence)
      if (debug && (copy || (!hard && shared.size === 0) || (hard && shared.size > 0))) {
        console.error(`drop (${copy ? "copy" : hard ? "not hard" : "unfair"}): ${question} [${[...shared].join(",")}] <- ${text.slice(0, 160)}`)
      }
      if (copy) dropped.copies++
      else if (!hard && shared.size === 0) dropped.unfair++
      else if (hard && shared.size > 0) dropped.notHard++
      else return [...shared]
      return null
    },
    /**
     * A context-dependent question: no content word in common with its evidence turn, at least one
     * with the turns around it, and no copy of either. The words shared with those turns, or null
     * when the question is dropped.
     */
    checkContext: (question: string, evidence: ReadonlyArray<string>, around: ReadonlyArray<string>): ReadonlyArray<string> | null => {
      const leaked = sharedWith(question, evidence.join("\n"))
      const shared = sharedWith(question, around.join("\n"))
      const copy = copies(question, [...evidence, ...around])
      const why = copy ? "copy" : leaked.size > 0 ? "leak" : shared.size === 0 ? "no neighbour" : null
      if (debug && why !== null) {
        console.error(`drop (${why}): ${question} [${[...leaked, ...shared].join(",")}] <- ${evidence.join(" / ").slice(0, 100)} | ${around.join(" / ").slice(0, 100)}`)
      }
      if (why === "copy") dropped.copies++
      else if (why === "leak") dropped.leaks++
      else if (why === "no neighbour") dropped.noNeighbour++
      else return [...shared]
      return null
    }
  }
}
