/**
 * Independent checks of the memory invariants, written against the messages a test appended (not
 * against what the code under test computed): a tool-pairing validator modelled on the Anthropic
 * and OpenAI rules, the fresh tail, snapshots of a session's rows, the DAG and lossless walks (over
 * MemoryStore links and over Explorer describe/expand), assembly and compaction reports.
 */
import { assert } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ItemMeta, planCondensedChunks, planLeafChunks, type Span } from "../../../src/domain/memory/context.ts"
import { chunkCapOf, TAIL_SHARE, tailTokensOf } from "../../../src/domain/memory/fit.ts"
import { renderHandoff } from "../../../src/domain/memory/handoff.ts"
import { renderSummary, repairPairing, summaryContextTokens } from "../../../src/domain/memory/render.ts"
import { formatSummaryId } from "../../../src/domain/memory/session.ts"
import type { Assembled, CompactionReport, CompactOptions, ExpandedItem } from "../../../src/domain/memory/types.ts"
import { verifySession } from "../../../src/domain/memory/verify.ts"
import {
  estimateMessageTokens,
  type Message,
  type NewMessage,
  toolResultIds,
  toolUseIds
} from "../../../src/domain/message.ts"
import type { CompactionConfig } from "../../../src/services/CompactionEngine.ts"
import { Explorer } from "../../../src/services/Explorer.ts"
import { MemoryStore, type StoredMessage, type StoredSummary } from "../../../src/services/MemoryStore.ts"
import { SessionManager } from "../../../src/services/SessionManager.ts"
import { rng } from "./sessions.ts"

// ---------------------------------------------------------------------------------------------
// Small helpers

/** JSON with object keys sorted, so two equal messages give the same key whatever their key order. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v)

export const plain = (m: NewMessage | Message): Message => ({ role: m.role, content: m.content })

export const sumTokens = (messages: ReadonlyArray<Message>): number =>
  messages.reduce((n, m) => n + estimateMessageTokens(m), 0)

const range = (n: number): Array<number> => Array.from({ length: n }, (_, i) => i + 1)

/** The definition of message.ts `continuesUnit`, re-derived from the appended messages. */
export const continuesPrevious = (appended: ReadonlyArray<NewMessage>, seq: number): boolean => {
  const m = appended[seq - 1]
  const prev = appended[seq - 2]
  if (m === undefined || prev === undefined || toolResultIds(m).length === 0) return false
  return prev.role === "assistant" || toolResultIds(prev).length > 0
}

// ---------------------------------------------------------------------------------------------
// Tool pairing (Anthropic / OpenAI rules)

/**
 * Problems of a message list as a model API sees it: empty messages; tool_use outside an assistant
 * message or tool_result inside one; a tool_result whose id is not a tool_use of the assistant
 * message right before it (only tool-result messages may come between); a tool_use not answered in
 * the tool-result messages right after its assistant message; an id used twice in one message or
 * answered twice.
 */
export const pairingProblems = (messages: ReadonlyArray<Message>): Array<string> => {
  const problems: Array<string> = []
  messages.forEach((m, i) => {
    if (m.content.length === 0) problems.push(`message ${i} is empty`)
    if (typeof m.content !== "string" && m.content.some((b) => b.type === "text" && b.text.length === 0)) {
      problems.push(`message ${i} has an empty text block`)
    }
    const uses = toolUseIds(m)
    const results = toolResultIds(m)
    if (m.role !== "assistant" && uses.length > 0) problems.push(`message ${i} (${m.role}) has tool_use blocks`)
    if (m.role === "assistant" && results.length > 0) problems.push(`message ${i} (assistant) has tool_result blocks`)
    if (m.role !== "assistant" && results.length > 0) {
      let j = i - 1
      while (j >= 0) {
        const p = messages[j]
        if (p === undefined || p.role === "assistant" || toolResultIds(p).length === 0) break
        j--
      }
      const owner = messages[j]
      const ownerUses = new Set(owner !== undefined && owner.role === "assistant" ? toolUseIds(owner) : [])
      for (const id of results) {
        if (!ownerUses.has(id)) problems.push(`message ${i}: tool_result ${id} has no tool_use right before it`)
      }
    }
    if (new Set(uses).size !== uses.length) problems.push(`message ${i}: duplicate tool_use ids`)
    if (m.role === "assistant" && uses.length > 0) {
      const answered: Array<string> = []
      for (let j = i + 1; j < messages.length; j++) {
        const r = messages[j]
        if (r === undefined || r.role === "assistant" || toolResultIds(r).length === 0) break
        answered.push(...toolResultIds(r))
      }
      for (const id of uses) {
        const n = answered.filter((x) => x === id).length
        if (n === 0) problems.push(`message ${i}: tool_use ${id} is not answered right after it`)
        if (n > 1) problems.push(`message ${i}: tool_use ${id} is answered ${n} times`)
      }
    }
  })
  return problems
}

// ---------------------------------------------------------------------------------------------
// Fresh tail and units (independent re-implementation of the rule stated in the issue)

/**
 * Start of the fresh tail: the `freshTail`-th message item from the end (or the first message item
 * when there are fewer), moved back while it would start on a message continuing the one before;
 * then, with a token cap (issue 11: a share of the budget), the newest whole units from there whose
 * tokens fit the cap — but at least the newest unit.
 */
export const tailStartOf = (
  items: ReadonlyArray<ItemMeta>,
  continues: (item: ItemMeta) => boolean,
  freshTail: number,
  maxTokens: number = Number.POSITIVE_INFINITY
): number => {
  const messageIndices = items.flatMap((it, i) => (it.kind === "message" ? [i] : []))
  let start = freshTail === 0 || messageIndices.length === 0
    ? items.length
    : (messageIndices[Math.max(0, messageIndices.length - freshTail)] ?? items.length)
  while (start > 0 && start < items.length) {
    const it = items[start]
    if (it === undefined || !continues(it)) break
    start--
  }
  if (start >= items.length) return start
  // Unit starts at or after `start`, newest first; keep the oldest one whose suffix fits the cap.
  const unitStarts = unitsBefore(items, continues, items.length).map((u) => u.start).filter((i) => i >= start)
  const suffixTokens = (from: number) => items.slice(from).reduce((n, it) => n + it.tokens, 0)
  const fitting = unitStarts.filter((i) => suffixTokens(i) <= maxTokens)
  return fitting[0] ?? unitStarts[unitStarts.length - 1] ?? start
}

/** Atomic units of items[0, end): an item plus the items continuing it. */
export const unitsBefore = (items: ReadonlyArray<ItemMeta>, continues: (item: ItemMeta) => boolean, end: number) => {
  const units: Array<Span> = []
  for (let i = 0; i < end; i++) {
    const it = items[i]
    const last = units[units.length - 1]
    if (it !== undefined && continues(it) && last !== undefined) units[units.length - 1] = { start: last.start, end: i + 1 }
    else units.push({ start: i, end: i + 1 })
  }
  return units
}

// ---------------------------------------------------------------------------------------------
// Snapshots

export interface Links {
  readonly parents: ReadonlyArray<number>
  readonly constituents: ReadonlyArray<number>
  readonly sourceMessages: ReadonlyArray<number>
  readonly live: boolean
}

export interface Snapshot {
  readonly conversationId: number
  readonly history: ReadonlyArray<StoredMessage>
  readonly items: ReadonlyArray<ItemMeta>
  /** Sorted by id. */
  readonly summaries: ReadonlyArray<StoredSummary>
  readonly links: ReadonlyMap<number, Links>
}

/** Everything the store holds for a session: raw messages, live items, summaries and DAG links. */
export const snapshot = (sessionKey: string) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const conversation = yield* store.getConversation(sessionKey)
    const history = yield* store.messagesBySeq(conversation.id, 1, -1)
    const items = yield* store.items(conversation.id)
    const input = yield* store.verifyInput(conversation.id, sessionKey)
    const ids = input.summaries.map((s) => s.id).sort((a, b) => a - b)
    const summaries = yield* store.summariesByIds(ids)
    const links = new Map<number, Links>()
    for (const id of ids) links.set(id, yield* store.summaryLinks(id))
    const snap: Snapshot = { conversationId: conversation.id, history, items, summaries, links }
    return snap
  })

// ---------------------------------------------------------------------------------------------
// Lossless + DAG

/** Raw messages exactly as appended (seq, role, content, createdAt, tokens). */
export const assertHistory = (history: ReadonlyArray<StoredMessage>, appended: ReadonlyArray<NewMessage>, what: string) => {
  assert.strictEqual(history.length, appended.length, `${what}: number of stored messages`)
  history.forEach((h, i) => {
    const a = appended[i]
    if (a === undefined) return
    assert.deepStrictEqual(
      { seq: h.seq, role: h.role, message: h.message, createdAt: h.createdAt, tokens: h.tokens },
      { seq: i + 1, role: a.role, message: plain(a), createdAt: a.createdAt, tokens: estimateMessageTokens(a) },
      `${what}: message seq ${i + 1} differs from what was appended`
    )
  })
}

/**
 * Walks the DAG over MemoryStore rows and asserts: acyclic; leaf depth 0 over ≥ 1 consecutive
 * messages; condensed depth = deepest child's depth + 1 over ≥ 2 children (children share a depth
 * unless compaction folded mixed depths to fit a budget); recorded seq ranges and time
 * ranges cover the sources; parent/child links agree; a summary is live xor has one parent; every
 * summary is reachable from the live context; and the live context, expanded, is every appended
 * message exactly once, in order. Also checks the tokens and unit flags copied into the items.
 */
export const assertDag = (snap: Snapshot, appended: ReadonlyArray<NewMessage>) => {
  const seqById = new Map(snap.history.map((m) => [m.id, m.seq]))
  const sumById = new Map(snap.summaries.map((s) => [s.id, s]))
  const linksOf = (id: number): Links => {
    const l = snap.links.get(id)
    assert.isDefined(l, `links of summary ${id}`)
    return l ?? { parents: [], constituents: [], sourceMessages: [], live: false }
  }
  const liveSummaries = new Set(snap.items.flatMap((it) => (it.kind === "summary" ? [it.refId] : [])))

  // Acyclic (DFS with grey/black marks).
  const mark = new Map<number, "grey" | "black">()
  const visit = (id: number, path: ReadonlyArray<number>): void => {
    const m = mark.get(id)
    if (m === "black") return
    assert.notStrictEqual(m, "grey", `cycle in the DAG: ${[...path, id].join(" → ")}`)
    mark.set(id, "grey")
    for (const c of linksOf(id).constituents) visit(c, [...path, id])
    mark.set(id, "black")
  }
  for (const s of snap.summaries) visit(s.id, [])

  // Messages below each summary, in order.
  const belowMemo = new Map<number, ReadonlyArray<number>>()
  const below = (id: number): ReadonlyArray<number> => {
    const hit = belowMemo.get(id)
    if (hit !== undefined) return hit
    const l = linksOf(id)
    const seqs = sumById.get(id)?.kind === "leaf"
      ? l.sourceMessages.map((m) => seqById.get(m) ?? -1)
      : l.constituents.flatMap(below)
    belowMemo.set(id, seqs)
    return seqs
  }

  for (const s of snap.summaries) {
    const l = linksOf(s.id)
    const at = `summary ${s.id}`
    if (s.kind === "leaf") {
      assert.strictEqual(s.depth, 0, `${at}: leaf depth`)
      assert.strictEqual(l.constituents.length, 0, `${at}: leaf with constituent summaries`)
      assert.isAbove(l.sourceMessages.length, 0, `${at}: leaf without source messages`)
    } else {
      assert.strictEqual(s.kind, "condensed", `${at}: kind`)
      assert.strictEqual(l.sourceMessages.length, 0, `${at}: condensed with direct messages`)
      assert.isAtLeast(l.constituents.length, 2, `${at}: condensed with fewer than 2 constituents`)
      const deepest = Math.max(...l.constituents.map((c) => sumById.get(c)?.depth ?? Number.NaN))
      assert.strictEqual(s.depth, deepest + 1, `${at}: depth ${s.depth} over children of depth at most ${deepest}`)
      for (const c of l.constituents) {
        const child = sumById.get(c)
        assert.isDefined(child, `${at}: constituent ${c} missing`)
        if (child === undefined) continue
        assert.isAtMost(s.earliestAt, child.earliestAt, `${at}: earliestAt does not cover child ${c}`)
        assert.isAtLeast(s.latestAt, child.latestAt, `${at}: latestAt does not cover child ${c}`)
        assert.deepStrictEqual(linksOf(c).parents, [s.id], `${at}: child ${c} does not name it as its one parent`)
      }
    }
    const seqs = below(s.id)
    assert.isAbove(seqs.length, 0, `${at}: covers no message`)
    seqs.forEach((q, i) => {
      if (i > 0) assert.strictEqual(q, (seqs[i - 1] ?? 0) + 1, `${at}: sources not consecutive`)
    })
    assert.strictEqual(s.firstSeq, seqs[0], `${at}: firstSeq`)
    assert.strictEqual(s.lastSeq, seqs[seqs.length - 1], `${at}: lastSeq`)
    const times = seqs.map((q) => appended[q - 1]?.createdAt ?? Number.NaN)
    assert.isAtMost(s.earliestAt, Math.min(...times), `${at}: earliestAt does not cover its messages`)
    assert.isAtLeast(s.latestAt, Math.max(...times), `${at}: latestAt does not cover its messages`)
    assert.isAtMost(l.parents.length, 1, `${at}: more than one parent`)
    for (const p of l.parents) assert.include(linksOf(p).constituents, s.id, `${at}: parent ${p} does not list it`)
    assert.strictEqual(l.live, liveSummaries.has(s.id), `${at}: live flag`)
    assert.notStrictEqual(l.live, l.parents.length === 1, `${at}: must be live xor have a parent`)
  }

  // Every summary is reachable from the live context.
  const reachable = new Set<number>()
  const reach = (id: number): void => {
    reachable.add(id)
    for (const c of linksOf(id).constituents) reach(c)
  }
  for (const id of liveSummaries) reach(id)
  assert.strictEqual(reachable.size, snap.summaries.length, "summaries unreachable from the live context")

  // Lossless: the live context expands to every message exactly once, in order.
  const expanded = snap.items.flatMap((it) => (it.kind === "message" ? [seqById.get(it.refId) ?? -1] : below(it.refId)))
  assert.deepStrictEqual(expanded, range(appended.length), "live context does not expand to messages 1..N")

  // Items carry the right tokens and unit flags.
  snap.items.forEach((it, i) => {
    if (it.kind === "message") {
      const seq = seqById.get(it.refId) ?? -1
      const m = appended[seq - 1]
      assert.strictEqual(it.tokens, m === undefined ? -1 : estimateMessageTokens(m), `item ${i}: tokens`)
      assert.strictEqual(it.continuesUnit, continuesPrevious(appended, seq), `item ${i}: continuesUnit`)
      assert.strictEqual(it.depth, -1, `item ${i}: depth`)
    } else {
      const s = sumById.get(it.refId)
      assert.isDefined(s, `item ${i}: summary ${it.refId}`)
      if (s === undefined) return
      assert.strictEqual(it.tokens, summaryContextTokens(s), `item ${i}: summary tokens`)
      assert.strictEqual(it.depth, s.depth, `item ${i}: depth`)
      assert.isFalse(it.continuesUnit, `item ${i}: a summary continues nothing`)
    }
  })
}

/**
 * Lossless through the Explorer: describe every summary reachable from the live context, expand it
 * page by page (random page sizes), and reach every message that is not live itself, with its
 * exact content. Describe/expand outside the session's scope must say "not found".
 */
export const assertExplorer = (snap: Snapshot, appended: ReadonlyArray<NewMessage>, sessionKey: string, seed: number) =>
  Effect.gen(function*() {
    const found = yield* Effect.serviceOption(Explorer)
    if (Option.isNone(found)) return
    const explorer = found.value
    const r = rng(seed)
    const scope = { _tag: "Session", sessionKey } as const
    const sumById = new Map(snap.summaries.map((s) => [s.id, s]))
    const reached: Array<number> = []

    const walk = (id: number): Effect.Effect<void, unknown> =>
      Effect.gen(function*() {
        const s = sumById.get(id)
        const links = snap.links.get(id)
        assert.isDefined(s)
        assert.isDefined(links)
        if (s === undefined || links === undefined) return
        const d = yield* explorer.describe(formatSummaryId(id), scope)
        assert.deepStrictEqual(
          {
            id: d.id,
            kind: d.kind,
            depth: d.depth,
            live: d.live,
            parents: d.parents,
            childSummaries: d.childSummaries,
            childMessages: d.childMessages,
            sourceRange: d.sourceRange,
            earliestAt: d.earliestAt,
            latestAt: d.latestAt,
            content: d.content,
            tokens: d.tokens,
            sessionKey: d.sessionKey
          },
          {
            id: formatSummaryId(id),
            kind: s.kind,
            depth: s.depth,
            live: links.live,
            parents: links.parents.map(formatSummaryId),
            childSummaries: links.constituents.map(formatSummaryId),
            childMessages: links.sourceMessages.length,
            sourceRange: { firstSeq: s.firstSeq, lastSeq: s.lastSeq, messages: s.lastSeq - s.firstSeq + 1 },
            earliestAt: s.earliestAt,
            latestAt: s.latestAt,
            content: s.content,
            tokens: s.tokenCount,
            sessionKey
          },
          `describe sum_${id}`
        )
        const maxTokens = r.chance(0.5) ? r.int(1, 400) : r.int(400, 50_000)
        const all: Array<ExpandedItem> = []
        let cursor: number | null = 0
        let pages = 0
        let page = yield* explorer.expand(formatSummaryId(id), { maxTokens, cursor: 0, scope })
        for (;;) {
          pages++
          assert.isAtMost(pages, page.totalItems + 1, `expand sum_${id}: too many pages`)
          assert.strictEqual(page.tokens, page.items.reduce((n, it) => n + it.tokens, 0), `expand sum_${id}: page tokens`)
          if (page.items.length > 1) assert.isAtMost(page.tokens, maxTokens, `expand sum_${id}: page over maxTokens`)
          if (page.totalItems > all.length) assert.isAbove(page.items.length, 0, `expand sum_${id}: empty page`)
          all.push(...page.items)
          cursor = page.nextCursor
          if (cursor === null) break
          assert.strictEqual(cursor, all.length, `expand sum_${id}: cursor`)
          page = yield* explorer.expand(formatSummaryId(id), { maxTokens, cursor, scope })
        }
        assert.strictEqual(all.length, page.totalItems, `expand sum_${id}: item count`)
        if (s.kind === "leaf") {
          assert.deepStrictEqual(all.map((it) => it.id), links.sourceMessages.map((m) => `msg_${m}`), `expand sum_${id}: sources`)
          for (const it of all) {
            assert.strictEqual(it.kind, "message")
            if (it.kind !== "message") continue
            const a = appended[it.seq - 1]
            assert.isDefined(a, `expand sum_${id}: seq ${it.seq}`)
            if (a === undefined) continue
            assert.deepStrictEqual(
              { message: it.message, createdAt: it.createdAt, tokens: it.tokens },
              { message: plain(a), createdAt: a.createdAt, tokens: estimateMessageTokens(a) },
              `expand sum_${id}: message seq ${it.seq}`
            )
            reached.push(it.seq)
          }
        } else {
          assert.deepStrictEqual(all.map((it) => it.id), links.constituents.map(formatSummaryId), `expand sum_${id}: constituents`)
          const deepest = Math.max(...all.map((it) => (it.kind === "summary" ? it.depth : -1)))
          assert.strictEqual(deepest, s.depth - 1, `expand sum_${id}: one deeper than its deepest child`)
          for (const it of all) {
            assert.strictEqual(it.kind, "summary")
            if (it.kind !== "summary") continue
            assert.isBelow(it.depth, s.depth, `expand sum_${id}: child depth`)
            const childId = Number(it.id.slice(4))
            yield* walk(childId)
          }
        }
      })

    const seqById = new Map(snap.history.map((m) => [m.id, m.seq]))
    for (const it of snap.items) {
      if (it.kind === "message") reached.push(seqById.get(it.refId) ?? -1)
      else yield* walk(it.refId)
    }
    assert.deepStrictEqual(reached, range(appended.length), "describe/expand from the live context reach messages 1..N")

    const first = snap.summaries[0]
    if (first !== undefined) {
      const other = { _tag: "Session", sessionKey: `${sessionKey}-other` } as const
      const e1 = yield* Effect.flip(explorer.describe(formatSummaryId(first.id), other))
      assert.strictEqual(e1._tag, "SummaryNotFound", "describe outside the session scope")
      const e2 = yield* Effect.flip(explorer.expand(formatSummaryId(first.id), { scope: { _tag: "User", userId: `${first.userId}-x` } }))
      assert.strictEqual(e2._tag, "SummaryNotFound", "expand outside the user scope")
    }
  })

/** All the state checks after an operation; returns the snapshot they ran on. */
export const checkState = (sessionKey: string, appended: ReadonlyArray<NewMessage>, seed: number) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const sessions = yield* SessionManager
    assertHistory(yield* sessions.loadHistory(sessionKey), appended, "loadHistory")
    const snap = yield* snapshot(sessionKey)
    assertHistory(snap.history, appended, "messagesBySeq")
    const problems = verifySession(yield* store.verifyInput(snap.conversationId, sessionKey))
    assert.deepStrictEqual(problems, [], "verifySession")
    assertDag(snap, appended)
    yield* assertExplorer(snap, appended, sessionKey, seed)
    return snap
  })

// ---------------------------------------------------------------------------------------------
// Assembly

export interface AssembleCase {
  readonly assembled: Assembled
  readonly snap: Snapshot
  readonly appended: ReadonlyArray<NewMessage>
  readonly budget: number
  readonly freshTail: number
  /** The fresh tail's share of the budget the assembly was asked for (default TAIL_SHARE). */
  readonly tailShare?: number | undefined
  /**
   * LCM assembles from the live items; Simple from its view: the newest live summary, rendered as
   * summary + acknowledgement, and the raw messages after it. The rules are the same.
   */
  readonly mode: "lcm" | "simple"
}

/** Simple's view, re-derived from a snapshot: the newest live summary item (if any) and the messages after it. */
export const simpleView = (snap: Snapshot): ReadonlyArray<ItemMeta> => {
  let newest: ItemMeta | undefined
  for (const it of snap.items) if (it.kind === "summary") newest = it
  const summary = newest === undefined ? undefined : snap.summaries.find((s) => s.id === newest?.refId)
  const after = summary?.lastSeq ?? 0
  const messages = snap.history.filter((m) => m.seq > after).map((m): ItemMeta => ({
    position: m.seq,
    kind: "message",
    refId: m.id,
    tokens: estimateMessageTokens(m.message),
    continuesUnit: false,
    depth: -1
  }))
  return newest === undefined ? messages : [newest, ...messages]
}

/** Context tokens of Simple's view, as Simple renders it. */
export const simpleViewTokens = (snap: Snapshot): number =>
  simpleView(snap).reduce((n, it) => {
    if (it.kind === "message") return n + it.tokens
    const s = snap.summaries.find((x) => x.id === it.refId)
    return n + (s === undefined ? 0 : sumTokens(renderHandoff(s)))
  }, 0)

/**
 * Order, fresh tail, budget and pairing of one assembled context, against the appended messages:
 * - the output ends with the fresh tail verbatim (repaired only where the session so far ends in a
 *   tool call still waiting for its results), and says how long it is; the tail is the newest
 *   `freshTail` messages cut to the newest whole units within the tail's share of the budget (at
 *   least the newest unit);
 * - the older part is whole units of the live context (Simple: of its view) before the tail, in
 *   order, so the output is chronological (each message / summary covers seqs after the previous one);
 * - the summaries before the tail come first (issue 11: the oldest history is given up last): taken
 *   oldest first, a summary is left out only when it does not fit beside the tail and the older
 *   summaries taken;
 * - the raw units taken before the tail are the newest ones, without a gap, and the raw unit before
 *   them did not fit in what was left;
 * - tokens ≤ budget unless the fresh tail alone exceeds it (then nothing older is included);
 * - the pairing validator finds nothing.
 */
export const assertAssembled = (c: AssembleCase) => {
  const { assembled, snap, appended, budget, freshTail, mode } = c
  const seqById = new Map(snap.history.map((m) => [m.id, m.seq]))
  const sumById = new Map(snap.summaries.map((s) => [s.id, s]))
  const items: ReadonlyArray<ItemMeta> = mode === "lcm" ? snap.items : simpleView(snap)
  const continues = (it: ItemMeta) => it.kind === "message" && continuesPrevious(appended, seqById.get(it.refId) ?? -1)
  const render = (it: ItemMeta): ReadonlyArray<Message> => {
    if (it.kind === "message") {
      const a = appended[(seqById.get(it.refId) ?? 0) - 1]
      assert.isDefined(a)
      return a === undefined ? [] : [plain(a)]
    }
    const s = sumById.get(it.refId)
    assert.isDefined(s)
    if (s === undefined) return []
    return mode === "lcm" ? [renderSummary(s)] : renderHandoff(s)
  }
  const seqRange = (it: ItemMeta): readonly [number, number] => {
    if (it.kind === "message") {
      const q = seqById.get(it.refId) ?? -1
      return [q, q]
    }
    const s = sumById.get(it.refId)
    return s === undefined ? [-1, -1] : [s.firstSeq, s.lastSeq]
  }
  const rendered = items.map(render)
  const out = assembled.messages
  const what = `assemble(${mode}, budget ${budget}, freshTail ${freshTail})`

  // Pairing.
  assert.deepStrictEqual(pairingProblems(out), [], `${what}: tool pairing`)

  // Fresh tail, verbatim.
  const tailCap = tailTokensOf(budget, c.tailShare ?? TAIL_SHARE)
  const tailStart = tailStartOf(items, continues, freshTail, tailCap)
  const rawTail = rendered.slice(tailStart).flat()
  const sessionComplete = pairingProblems(appended.map(plain)).length === 0
  if (sessionComplete) {
    // Compaction never cuts a unit, so in a session whose tool calls are all answered the tail is valid.
    assert.deepStrictEqual(pairingProblems(rawTail), [], `${what}: the raw fresh tail is not a valid conversation`)
  }
  const tail = pairingProblems(rawTail).length === 0 ? rawTail : repairPairing(rawTail)
  assert.strictEqual(assembled.freshTailMessages, tail.length, `${what}: freshTailMessages`)
  assert.isAtLeast(out.length, tail.length, `${what}: output shorter than the fresh tail`)
  assert.deepStrictEqual(out.slice(out.length - tail.length), tail, `${what}: output does not end with the fresh tail`)

  // Older part: whole units, in order. A session that ends in a tool call still waiting for its
  // results has one unit (the last) that the repair may change; its messages map to the unit.
  // Simple's summary renders as two messages (summary, acknowledgement) that map to its one item.
  const units = unitsBefore(items, continues, tailStart)
  const lastUnit = units[units.length - 1]
  const dangling = !sessionComplete && lastUnit !== undefined && lastUnit.end === items.length ? lastUnit : undefined
  const older = out.slice(0, out.length - tail.length)
  const indexOf = new Map(rendered.slice(0, tailStart).flatMap((ms, i) => ms.map((m) => [canonical(m), i] as const)))
  const chosen: Array<number> = []
  older.forEach((m, k) => {
    const i = indexOf.get(canonical(m)) ?? dangling?.start
    assert.isDefined(i, `${what}: older message ${k} is not a context item before the tail`)
    if (i !== undefined && !chosen.includes(i)) chosen.push(i)
  })
  for (const i of chosen) {
    const it = items[i]
    if (it?.kind !== "summary" || mode === "lcm") continue
    // Simple: the summary and its acknowledgement come together, first.
    assert.deepStrictEqual(older.slice(0, 2), rendered[i], `${what}: Simple's summary is not summary + acknowledgement first`)
  }
  let lastSeq = 0
  for (const i of [...chosen, ...items.slice(tailStart).map((_, j) => tailStart + j)]) {
    const it = items[i]
    if (it === undefined) continue
    const [first, last] = seqRange(it)
    assert.isAbove(first, lastSeq, `${what}: output is not chronological at item ${i}`)
    lastSeq = last
  }
  const included = new Set(chosen)
  const tailTokens = sumTokens(rawTail)
  const unitCost = (u: Span) => sumTokens(rendered.slice(u.start, u.end).flat())
  const isSummary = (u: Span) => items.slice(u.start, u.end).every((it) => it.kind === "summary")
  const taken = (u: Span) => {
    const size = u.end - u.start
    const n = range(size).filter((j) => included.has(u.start + j - 1)).length
    if (u !== dangling) assert.include([0, size], n, `${what}: unit ${u.start}..${u.end} cut`)
    return n > 0
  }
  // Summaries, oldest first: one left out did not fit beside the tail and the older ones taken.
  let used = tailTokens
  for (const unit of units) {
    if (!isSummary(unit)) continue
    if (taken(unit)) used += unitCost(unit)
    else if (dangling === undefined) {
      assert.isAbove(unitCost(unit), budget - used, `${what}: summary unit ${unit.start}..${unit.end} left out though it fits`)
    }
  }
  // Raw units, newest first, without a gap: the first one left out did not fit; none older is taken.
  let gap = false
  for (let u = units.length - 1; u >= 0; u--) {
    const unit = units[u]
    if (unit === undefined || isSummary(unit)) continue
    if (taken(unit)) {
      assert.isFalse(gap && dangling === undefined, `${what}: raw unit ${unit.start}..${unit.end} taken after a gap`)
      used += unitCost(unit)
    } else {
      if (!gap && dangling === undefined) {
        assert.isAbove(unitCost(unit), budget - used, `${what}: raw unit ${unit.start}..${unit.end} left out though it fits`)
      }
      gap = true
    }
  }
  if (dangling === undefined) assert.strictEqual(assembled.omittedItems, tailStart - chosen.length, `${what}: omittedItems`)
  assert.strictEqual(
    assembled.summaries,
    [...chosen, ...items.slice(tailStart).map((_, j) => tailStart + j)].filter((i) => items[i]?.kind === "summary").length,
    `${what}: summaries`
  )

  // Budget.
  const tokens = sumTokens(out)
  assert.strictEqual(assembled.tokens, tokens, `${what}: reported tokens`)
  if (tailTokens > budget) assert.strictEqual(older.length, 0, `${what}: fresh tail over budget, yet older items included`)
  else assert.isAtMost(tokens, budget, `${what}: over budget`)
}

// ---------------------------------------------------------------------------------------------
// Compaction reports

/** Context cost of a summary's frame (id, depth, dates, expand hint), as the engine computes it. */
export const FRAME_TOKENS = estimateMessageTokens(
  renderSummary({ id: 1e9, kind: "condensed", depth: 9, earliestAt: 0, latestAt: 0, content: "" })
)

/**
 * Chunks a fresh plan would still summarize (the engine's planners and its worth-it filter). With a
 * budget, the fresh tail and the chunks are capped by their shares of it, and when the ordinary plan
 * is empty while the context is over threshold × budget, the plan "to fit": leaf runs of any length,
 * adjacent summaries of any depths.
 */
export const plannedChunks = (
  items: ReadonlyArray<ItemMeta>,
  config: CompactionConfig,
  freshTail: number,
  budget?: number,
  target?: number
) => {
  const tailTokens = budget === undefined ? undefined : tailTokensOf(budget)
  const maxTokens = budget === undefined ? config.chunkTokens : chunkCapOf(budget, config.chunkTokens)
  const plan = (fit: boolean) =>
    [
      ...planLeafChunks(items, {
        freshTail,
        tailTokens,
        minItems: fit ? 1 : config.leafMinMessages,
        maxTokens,
        maxItems: Number.MAX_SAFE_INTEGER
      }),
      ...planCondensedChunks(items, {
        freshTail,
        tailTokens,
        minItems: fit ? 2 : config.condensedMin,
        maxTokens,
        maxItems: config.condensedFanIn,
        anyDepth: fit
      })
    ].filter((span) => items.slice(span.start, span.end).reduce((n, it) => n + it.tokens, 0) > 2 * FRAME_TOKENS)
  const normal = plan(false)
  const over = budget !== undefined && items.reduce((n, it) => n + it.tokens, 0) > (target ?? config.threshold * budget)
  return normal.length === 0 && over ? plan(true) : normal
}

/**
 * A compaction report is truthful: token sums match the items before/after, summary counts match
 * the new rows, passes stay within the bound, the fresh tail was not touched, and the stop reason
 * agrees with the state (below threshold ⇔ at or under threshold × budget; no_candidates ⇒ a fresh
 * plan finds nothing; max_iterations ⇒ every pass ran and something is left; never no_progress,
 * since every committed summary is smaller than what it replaces).
 */
export const assertReport = (args: {
  readonly report: CompactionReport
  readonly before: Snapshot
  readonly after: Snapshot
  readonly options: CompactOptions
  readonly config: CompactionConfig
  readonly appended: ReadonlyArray<NewMessage>
}) => {
  const { report, before, after, options, config, appended } = args
  const what = `compact(${JSON.stringify(options)}) → ${JSON.stringify(report)}`
  const tokensOf = (s: Snapshot) => s.items.reduce((n, it) => n + it.tokens, 0)
  assert.strictEqual(report.tokensBefore, tokensOf(before), `${what}: tokensBefore`)
  assert.strictEqual(report.tokensAfter, tokensOf(after), `${what}: tokensAfter`)
  const old = new Set(before.summaries.map((s) => s.id))
  const created = after.summaries.filter((s) => !old.has(s.id))
  assert.strictEqual(after.summaries.length - created.length, before.summaries.length, `${what}: summaries disappeared`)
  assert.strictEqual(report.leafSummaries, created.filter((s) => s.kind === "leaf").length, `${what}: leafSummaries`)
  assert.strictEqual(report.condensedSummaries, created.filter((s) => s.kind === "condensed").length, `${what}: condensedSummaries`)
  assert.strictEqual(report.compacted, created.length > 0, `${what}: compacted`)
  const maxIterations = options.full === true ? config.maxIterations : 1
  assert.isAtMost(report.passes, 2 * maxIterations, `${what}: passes over the bound`)
  assert.isAtMost(report.tokensAfter, report.tokensBefore, `${what}: context grew`)
  if (created.length > 0) assert.isBelow(report.tokensAfter, report.tokensBefore, `${what}: summaries that saved nothing`)
  assert.notStrictEqual(report.stopReason, "no_progress", `${what}: no_progress although every summary shrinks the context`)

  // The last unit is never compacted (its tool calls may still wait for results): a fresh tail of 0
  // protects it as a fresh tail of 1 does. With a budget, the tail is also capped by its share of it.
  const freshTail = Math.max(1, options.freshTail ?? config.freshTail)
  const limit = options.budget === undefined ? undefined : options.target ?? config.threshold * options.budget
  const below = limit !== undefined && report.tokensAfter <= limit
  assert.strictEqual(report.stopReason === "below_threshold", below, `${what}: below_threshold ⇔ tokensAfter ≤ threshold × budget`)
  if (limit !== undefined && report.tokensBefore <= limit) assert.strictEqual(report.passes, 0, `${what}: passes although below threshold`)
  else assert.isAtLeast(report.passes, 1, `${what}: no pass ran`)
  const left = plannedChunks(after.items, config, freshTail, options.budget, options.target)
  if (report.stopReason === "no_candidates") assert.deepStrictEqual(left, [], `${what}: no_candidates but a fresh plan finds chunks`)
  if (report.stopReason === "max_iterations") {
    assert.strictEqual(report.passes, 2 * maxIterations, `${what}: max_iterations before the last pass`)
    assert.isAbove(left.length, 0, `${what}: max_iterations but nothing is left to do`)
  }

  // The fresh tail (as it was before) is untouched: its message items are still live.
  const seqById = new Map(before.history.map((m) => [m.id, m.seq]))
  const continues = (it: ItemMeta) => it.kind === "message" && continuesPrevious(appended, seqById.get(it.refId) ?? -1)
  const tailStart = tailStartOf(before.items, continues, freshTail, options.budget === undefined ? undefined : tailTokensOf(options.budget))
  const liveAfter = new Set(after.items.map((it) => `${it.kind}:${it.refId}`))
  for (const it of before.items.slice(tailStart)) {
    assert.isTrue(liveAfter.has(`${it.kind}:${it.refId}`), `${what}: fresh-tail item ${it.kind} ${it.refId} was compacted`)
  }
}
