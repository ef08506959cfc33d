/**
 * Chat users' feedback on a shared playbook rule (issue 23): a rule for every user (global, or an
 * agent's without `user`) is something every user's prompt relies on, so one user's word must not
 * move it for the others — not by repeating it over many bursts, nor by draining it to nothing.
 *
 * Each user has one vote per shared rule: their latest feedback, replacing the earlier one. A vote
 * is counted into the rule (one feedback step: −0.20 or +0.05, through `applyFeedback`) at most
 * once in the user's lifetime, and only once CONSENSUS_USERS distinct users' latest votes agree with
 * it; from then on every further user who agrees is counted as they vote. So a single user moves a
 * shared rule by at most one step, and never on their own. The operator's feedback is not a vote: it
 * applies at once (Playbook.feedback with "operator").
 *
 * Meanwhile the user's own view adapts at once: `personal` is the part of their feedback that is not
 * (yet) in the shared rule — the sum of their steps, within ±MAX_PERSONAL, less the step counted into
 * the rule — and is added to the rule's confidence in what they are given. A user who says "bad"
 * three times stops getting the rule; nobody else notices. Pure.
 */
import { FAILURE_DECREMENT, type Outcome, round4, SUCCESS_INCREMENT } from "./confidence.ts"
import type { PlaybookRule } from "./rule.ts"

/** A shared rule changes for everyone only when this many distinct users' latest feedback agrees. */
export const CONSENSUS_USERS = 3
/** A user's own adjustment of a shared rule stays within ±this (their view is clamped to [0, 1] anyway). */
export const MAX_PERSONAL = 1

/** One user's feedback on one shared rule. */
export interface Vote {
  readonly userId: string
  /** Their latest feedback. */
  readonly vote: Outcome
  /** Their feedback not in the shared rule: added to its confidence in their own view. */
  readonly personal: number
  /** The outcome their vote was counted into the shared rule with (at most once, ever); null: not counted. */
  readonly counted: Outcome | null
  readonly at: number
}

/** One feedback step: what a success adds to a confidence, or a failure takes away. */
export const stepOf = (outcome: Outcome): number => (outcome === "success" ? SUCCESS_INCREMENT : -FAILURE_DECREMENT)

const clampPersonal = (x: number): number => round4(Math.min(MAX_PERSONAL, Math.max(-MAX_PERSONAL, x)))

export interface Cast {
  /** The votes that changed (the caster's, and any counted now), to be stored. */
  readonly changed: ReadonlyArray<Vote>
  /** Users counted into the shared rule by this cast: one step of `outcome` each goes to the rule. */
  readonly counted: ReadonlyArray<string>
  /** Distinct users whose latest feedback is this outcome, the caster included. */
  readonly agreeing: number
  /** The caster's vote after the cast. */
  readonly mine: Vote
}

/**
 * `userId` says `outcome` about a shared rule whose votes are `votes`, at `at`: their vote replaces
 * their earlier one and moves their own view by one step; when CONSENSUS_USERS users agree, every
 * agreeing user not counted yet is counted (their step leaves `personal`: it is in the rule now).
 */
export const castVote = (votes: ReadonlyArray<Vote>, userId: string, outcome: Outcome, at: number): Cast => {
  const before = votes.find((v) => v.userId === userId)
  const cast: Vote = {
    userId,
    vote: outcome,
    personal: clampPersonal((before?.personal ?? 0) + stepOf(outcome)),
    counted: before?.counted ?? null,
    at
  }
  const all = [...votes.filter((v) => v.userId !== userId), cast]
  const agreeing = all.filter((v) => v.vote === outcome)
  const toCount = agreeing.length >= CONSENSUS_USERS ? agreeing.filter((v) => v.counted === null) : []
  const countedNow = toCount.map((v): Vote => ({ ...v, counted: outcome, personal: clampPersonal(v.personal - stepOf(outcome)) }))
  const mine = countedNow.find((v) => v.userId === userId) ?? cast
  return {
    changed: [mine, ...countedNow.filter((v) => v.userId !== userId)],
    counted: countedNow.map((v) => v.userId),
    agreeing: agreeing.length,
    mine
  }
}

/** Undoes the counting of `vote` (its steps could not be written to the rule): its step goes back to `personal`. */
export const uncount = (vote: Vote): Vote =>
  vote.counted === null ? vote : { ...vote, counted: null, personal: clampPersonal(vote.personal + stepOf(vote.counted)) }

/** The rule as a user with this `personal` adjustment is given it (confidence kept in [0, 1], four decimals). */
export const personalView = (rule: PlaybookRule, personal: number): PlaybookRule =>
  personal === 0 ? rule : { ...rule, confidence: round4(Math.min(1, Math.max(0, rule.confidence + personal))) }

/** What the votes on a rule say (for operators): latest feedback by outcome, and how many were counted. */
export interface Tally {
  readonly success: number
  readonly failure: number
  readonly counted: number
}

export const tally = (votes: ReadonlyArray<Vote>): Tally => ({
  success: votes.filter((v) => v.vote === "success").length,
  failure: votes.filter((v) => v.vote === "failure").length,
  counted: votes.filter((v) => v.counted !== null).length
})
