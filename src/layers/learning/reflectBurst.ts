/**
 * Helpers of the learning loop (issue 15): reading a session's burst (its stored messages after the
 * latest diary entry), the entry id, and applying an outcome to the rules and skills a burst used.
 */
import { Effect, Random } from "effect"
import type { Outcome } from "../../domain/learning/confidence.ts"
import type { StoredMessage } from "../../services/MemoryStore.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import type { BurstUse } from "../../services/Diary.ts"
import type { FeedbackReport } from "../../services/Learning.ts"
import { Playbook } from "../../services/Playbook.ts"
import { SkillStats } from "../../services/SkillStats.ts"

/** Messages read per query while loading a burst. */
const PAGE = 500

/** The conversation's stored messages with seq ≥ `fromSeq`, in order (paged, so one query stays small). */
export const messagesFrom = Effect.fn("Learning.messagesFrom")(function*(conversationId: number, fromSeq: number) {
  const memory = yield* MemoryStore
  const out: Array<StoredMessage> = []
  let next = fromSeq
  for (;;) {
    const page = yield* memory.messagesBySeq(conversationId, next, PAGE)
    out.push(...page)
    const last = page[page.length - 1]
    if (page.length < PAGE || last === undefined) return out
    next = last.seq + 1
  }
})

/** Why a burst gives nothing to reflect on, or undefined when it does. */
export const tooLittle = (burst: ReadonlyArray<StoredMessage>): string | undefined => {
  if (burst.length < 2) return `only ${burst.length} new message since the last diary entry`
  if (!burst.some((m) => m.role === "assistant")) return "no reply of the agent since the last diary entry"
  return undefined
}

/** `diary_<base36 time>_<6 random base36 characters>`. */
export const entryId = (now: number) =>
  Effect.map(Random.nextIntBetween(0, 36 ** 6), (n) => `diary_${now.toString(36)}_${n.toString(36).padStart(6, "0")}`)

const unique = (xs: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(xs)]

/**
 * Applies one outcome to what the uses name: each rule once (whatever the number of turns it was
 * injected into: a burst is one application), each skill once per scope (operator skills are
 * counted per agent, a user's own per agent and user). Returns the rules found and the skills counted.
 *
 * The outcome is the word of the user the burst was with (their `/feedback`, or how their burst
 * went): on a rule for every user it is that user's vote, never the operator's (Playbook.feedback).
 */
export const applyOutcome = Effect.fn("Learning.applyOutcome")(function*(agentId: string, uses: ReadonlyArray<BurstUse>, outcome: Outcome) {
  const playbook = yield* Playbook
  const stats = yield* SkillStats
  const updated: Array<string> = []
  const noted: Array<string> = []
  const ruleUses = uses.filter((u) => u.kind === "rule")
  // A session has one user; grouped all the same, so that nobody's use is counted as another's word.
  for (const userId of unique(ruleUses.map((u) => u.userId))) {
    const ruleIds = unique(ruleUses.filter((u) => u.userId === userId).map((u) => u.ref))
    for (const r of yield* playbook.feedback(agentId, ruleIds, outcome, { user: userId })) {
      updated.push(r.rule.id)
      if (r.effect === "noted") noted.push(r.rule.id)
    }
  }
  const skills = new Map<string, { readonly userId: string; readonly name: string }>()
  for (const u of uses) {
    if (u.kind !== "skill") continue
    const userId = u.scope === "user" ? u.userId : ""
    skills.set(`${userId}\0${u.ref}`, { userId, name: u.ref })
  }
  for (const s of skills.values()) yield* stats.record({ agentId, userId: s.userId, name: s.name }, outcome)
  return { rules: unique(updated), forYou: unique(noted), skills: [...skills.values()].map((s) => s.name) } satisfies FeedbackReport
})
