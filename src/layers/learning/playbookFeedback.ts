/**
 * Feedback on playbook rules, and what one user is given (issue 23): the part of YamlPlaybook that
 * weighs who speaks. The operator's feedback, and a user's on a rule of their own, go to the rule at
 * once (one write per file); a chat user's feedback on a rule for every user is cast as a vote
 * (RuleVotes: one atomic step, across processes too), and only the steps of votes counted by a
 * consensus reach the rule. Should that write fail, the counting is taken back: the votes stay
 * pending rather than counted without effect, so no user's step is lost or applied twice.
 */
import { Clock, Effect } from "effect"
import { applyFeedback, type Outcome } from "../../domain/learning/confidence.ts"
import { personalView } from "../../domain/learning/consensus.ts"
import type { PlaybookError } from "../../domain/learning/errors.ts"
import type { PlaybookRule, SourcedRule } from "../../domain/learning/rule.ts"
import type { FeedbackFrom, RuleFeedback } from "../../services/Playbook.ts"
import { personalKey, type RuleVotes, scopeOf } from "../../services/RuleVotes.ts"
import type { Change, PlaybookFiles } from "./playbookFile.ts"

/** `steps` feedbacks of `outcome` at `now` (the first takes the decay so far; the rest find none). */
const applySteps = (rule: PlaybookRule, outcome: Outcome, steps: number, now: number): PlaybookRule => {
  let out = rule
  for (let i = 0; i < steps; i++) out = applyFeedback(out, outcome, now)
  return out
}

/** A rule where it lives: the file's path and the agent whose playbook it is (undefined: global). */
interface Located {
  readonly rule: PlaybookRule
  readonly path: string
  readonly agentId: string | undefined
}

export interface FeedbackDeps {
  readonly files: PlaybookFiles
  readonly votes: RuleVotes["Service"]
  readonly globalPath: string
  readonly agentPath: (agentId: string) => string
  readonly list: (agentId: string | undefined) => Effect.Effect<ReadonlyArray<SourcedRule>, PlaybookError>
}

export const makeFeedback = (deps: FeedbackDeps) => {
  const { files, votes } = deps

  /** `steps` of `outcome` to each rule of one file named in `steps`; the updated rules (one write). */
  const applyIn = (path: string, steps: ReadonlyMap<string, number>, outcome: Outcome, now: number) =>
    files.update(path, (rules): Effect.Effect<Change<ReadonlyArray<PlaybookRule>>> => {
      const updated: Array<PlaybookRule> = []
      const next = rules.map((r) => {
        const n = steps.get(r.id) ?? 0
        if (n === 0) return r
        const u = applySteps(r, outcome, n, now)
        updated.push(u)
        return u
      })
      return Effect.succeed(updated.length === 0 ? { rules: undefined, result: updated } : { rules: next, result: updated })
    })

  /** Each wanted id in the file it lives in: the agent's own shadows a global rule with the same id. */
  const locate = (agentId: string | undefined, ids: ReadonlySet<string>) =>
    Effect.map(deps.list(agentId), (rules) =>
      rules.filter((s) => ids.has(s.rule.id)).map((s): Located => {
        const owner = s.source === "agent" ? agentId : undefined
        return { rule: s.rule, agentId: owner, path: owner === undefined ? deps.globalPath : deps.agentPath(owner) }
      }))

  const feedback = Effect.fn("Playbook.feedback")(function*(agentId: string | undefined, ids: ReadonlyArray<string>, outcome: Outcome, from: FeedbackFrom) {
    const wanted = new Set(ids)
    if (wanted.size === 0) return [] as ReadonlyArray<RuleFeedback>
    const now = yield* Clock.currentTimeMillis
    const found = yield* locate(agentId, wanted)
    const user = from === "operator" ? undefined : from.user
    // The operator's word, and a user's on their own rule, apply at once. Rules scoped to another
    // user are not this user's to judge (they are never shown to them): skipped.
    const direct = found.filter((l) => user === undefined || l.rule.user === user)
    const shared = found.filter((l) => user !== undefined && l.rule.user === undefined)
    const out: Array<RuleFeedback> = []

    for (const path of new Set(direct.map((l) => l.path))) {
      const steps = new Map(direct.filter((l) => l.path === path).map((l) => [l.rule.id, 1] as const))
      for (const rule of yield* applyIn(path, steps, outcome, now)) out.push({ rule, effect: "applied", agreeing: 0 })
    }

    // A user's word on a rule for every user is their vote.
    for (const l of shared) {
      if (user === undefined) break
      const key = { scope: scopeOf(l.agentId), ruleId: l.rule.id }
      const cast = yield* votes.cast(key, user, outcome, now)
      let rule = l.rule
      if (cast.counted.length > 0) {
        const written = yield* applyIn(l.path, new Map([[l.rule.id, cast.counted.length]]), outcome, now).pipe(
          Effect.tapError(() => votes.uncount(key, cast.counted).pipe(Effect.ignore({ log: true, message: `playbook: the votes counted into ${l.rule.id} could not be taken back` })))
        )
        rule = written[0] ?? rule
      }
      out.push({ rule: personalView(rule, cast.mine.personal), effect: cast.counted.length > 0 ? "applied" : "noted", agreeing: cast.agreeing })
    }
    return out as ReadonlyArray<RuleFeedback>
  })

  const view = Effect.fn("Playbook.view")(function*(agentId: string, userId: string) {
    const rules = yield* deps.list(agentId)
    const adjustments = yield* votes.personal(userId, [scopeOf(undefined), scopeOf(agentId)])
    if (adjustments.size === 0) return rules
    return rules.map((s): SourcedRule => {
      if (s.rule.user !== undefined) return s
      const personal = adjustments.get(personalKey({ scope: scopeOf(s.source === "agent" ? agentId : undefined), ruleId: s.rule.id })) ?? 0
      return personal === 0 ? s : { ...s, rule: personalView(s.rule, personal) }
    })
  })

  return { feedback, view }
}
