/**
 * The lossless invariant and DAG integrity of one session, checked over plain rows (pure, O(n)).
 *
 * Lossless: the live context items, each expanded through the DAG to the raw messages below it,
 * give back every message exactly once and in order (seq 1..N). DAG: a leaf summary covers a run of
 * consecutive messages; a condensed summary covers ≥ 2 consecutive summaries and is one deeper than
 * the deepest of them (so the graph is acyclic; they share a depth unless compaction folded mixed
 * depths to fit a small budget); a summary has at most one parent and is either live or has one; its
 * time range covers its sources.
 */

export interface VerifyInput {
  readonly sessionKey: string
  /** Sorted by seq. */
  readonly messages: ReadonlyArray<{ readonly id: number; readonly seq: number; readonly createdAt: number }>
  readonly summaries: ReadonlyArray<{
    readonly id: number
    readonly kind: string
    readonly depth: number
    readonly earliestAt: number
    readonly latestAt: number
    readonly firstSeq: number
    readonly lastSeq: number
  }>
  /** Leaf summary → source message, sorted by (summaryId, ord). */
  readonly summaryMessages: ReadonlyArray<{ readonly summaryId: number; readonly messageId: number }>
  /** Condensed summary → constituent summary, sorted by (condensedId, ord). */
  readonly summaryParents: ReadonlyArray<{ readonly condensedId: number; readonly constituentId: number }>
  /** Sorted by position. */
  readonly items: ReadonlyArray<{ readonly position: number; readonly messageId: number | null; readonly summaryId: number | null }>
}

interface Cover {
  readonly first: number
  readonly last: number
  readonly min: number
  readonly max: number
}

export const verifySession = (input: VerifyInput): Array<string> => {
  const problems: Array<string> = []
  const p = (s: string) => {
    if (problems.length < 200) problems.push(`${input.sessionKey}: ${s}`)
  }
  const msgById = new Map(input.messages.map((m) => [m.id, m]))
  input.messages.forEach((m, i) => {
    if (m.seq !== i + 1) p(`message seq ${m.seq} found where ${i + 1} was expected (a message is missing)`)
  })
  const sumById = new Map(input.summaries.map((s) => [s.id, s]))
  const leafSources = new Map<number, Array<number>>()
  for (const l of input.summaryMessages) {
    const list = leafSources.get(l.summaryId) ?? []
    list.push(l.messageId)
    leafSources.set(l.summaryId, list)
  }
  const constituents = new Map<number, Array<number>>()
  const parentsOf = new Map<number, number>()
  for (const l of input.summaryParents) {
    const list = constituents.get(l.condensedId) ?? []
    list.push(l.constituentId)
    constituents.set(l.condensedId, list)
    if (parentsOf.has(l.constituentId)) p(`summary ${l.constituentId} has more than one parent`)
    parentsOf.set(l.constituentId, l.condensedId)
  }

  // Coverage of each summary, bottom-up by depth (depth strictly grows upward, so this terminates).
  const cover = new Map<number, Cover | null>()
  const sorted = [...input.summaries].sort((a, b) => a.depth - b.depth)
  for (const s of sorted) {
    let c: Cover | null = null
    const srcs = leafSources.get(s.id) ?? []
    const subs = constituents.get(s.id) ?? []
    if (s.kind === "leaf") {
      if (s.depth !== 0) p(`leaf summary ${s.id} has depth ${s.depth}`)
      if (subs.length > 0) p(`leaf summary ${s.id} has constituent summaries`)
      if (srcs.length === 0) p(`leaf summary ${s.id} has no source messages`)
      let prev: number | undefined
      for (const id of srcs) {
        const m = msgById.get(id)
        if (m === undefined) {
          p(`leaf summary ${s.id} links to missing message ${id}`)
          c = null
          break
        }
        if (prev !== undefined && m.seq !== prev + 1) p(`leaf summary ${s.id} sources are not consecutive at seq ${m.seq}`)
        prev = m.seq
        c = c === null
          ? { first: m.seq, last: m.seq, min: m.createdAt, max: m.createdAt }
          : { first: c.first, last: m.seq, min: Math.min(c.min, m.createdAt), max: Math.max(c.max, m.createdAt) }
      }
    } else if (s.kind === "condensed") {
      if (srcs.length > 0) p(`condensed summary ${s.id} links directly to messages`)
      if (subs.length < 2) p(`condensed summary ${s.id} has ${subs.length} constituent(s), expected at least 2`)
      const deepest = Math.max(...subs.map((id) => sumById.get(id)?.depth ?? Number.NEGATIVE_INFINITY))
      if (subs.length > 0 && deepest + 1 !== s.depth) {
        p(`condensed summary ${s.id} has depth ${s.depth}, but its deepest constituent has depth ${deepest}`)
      }
      for (const id of subs) {
        const child = sumById.get(id)
        const cc = cover.get(id)
        if (child === undefined || cc === undefined || cc === null) {
          p(`condensed summary ${s.id} links to missing or broken summary ${id}`)
          c = null
          break
        }
        if (child.depth >= s.depth) {
          p(`condensed summary ${s.id} (depth ${s.depth}) contains summary ${id} of depth ${child.depth}`)
        }
        if (c !== null && cc.first !== c.last + 1) p(`condensed summary ${s.id} constituents are not consecutive at seq ${cc.first}`)
        c = c === null ? cc : { first: c.first, last: cc.last, min: Math.min(c.min, cc.min), max: Math.max(c.max, cc.max) }
      }
    } else p(`summary ${s.id} has unknown kind ${s.kind}`)
    if (c !== null) {
      if (c.first !== s.firstSeq || c.last !== s.lastSeq) {
        p(`summary ${s.id} records seq ${s.firstSeq}..${s.lastSeq} but covers ${c.first}..${c.last}`)
      }
      if (s.earliestAt > c.min || s.latestAt < c.max) p(`summary ${s.id} time range does not cover its sources`)
    }
    cover.set(s.id, c)
  }

  // Live items must chain seq 1..N exactly.
  const live = new Set<number>()
  let next = 1
  for (const it of input.items) {
    if ((it.messageId === null) === (it.summaryId === null)) {
      p(`context item at position ${it.position} must reference exactly one message or summary`)
      continue
    }
    let c: Cover | null | undefined
    if (it.messageId !== null) {
      const m = msgById.get(it.messageId)
      c = m === undefined ? undefined : { first: m.seq, last: m.seq, min: m.createdAt, max: m.createdAt }
    } else if (it.summaryId !== null) {
      live.add(it.summaryId)
      if (parentsOf.has(it.summaryId)) p(`live summary ${it.summaryId} also has a parent`)
      c = cover.get(it.summaryId)
    }
    if (c === undefined || c === null) {
      p(`context item at position ${it.position} references a missing or broken row`)
      continue
    }
    if (c.first !== next) p(`context item at position ${it.position} covers seq ${c.first}..${c.last}, expected to start at ${next}`)
    next = c.last + 1
  }
  if (next !== input.messages.length + 1) {
    p(`live context covers messages up to seq ${next - 1} of ${input.messages.length}: messages are unreachable`)
  }
  for (const s of input.summaries) {
    if (!live.has(s.id) && !parentsOf.has(s.id)) p(`summary ${s.id} is neither live nor part of another summary`)
  }
  return problems
}
