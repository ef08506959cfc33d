/**
 * The Playbook over YAML files (issue 15): the global playbook `$ANNA_HOME/playbook.yaml` and one per
 * agent in its operator folder (`$ANNA_HOME/workspaces/<agent>/playbook.yaml`, never mounted into a
 * sandbox). Files are read and replaced through ./playbookFile.ts (regular files only, cached by
 * identity, atomic writes, an invalid file never overwritten); time comes from the Clock. Users'
 * feedback on shared rules is kept by RuleVotes and weighed in ./playbookFeedback.ts (issue 23).
 *
 * On PostgreSQL (issue 28) the same logic runs over the playbook_rules table instead
 * (./pgPlaybookRules.ts: one scope per file, '' global, the agent's id), so that several gateways
 * share the rules; `anna playbook export|import` turn a scope into the YAML file and back.
 */
import { Clock, Effect, Layer, Random } from "effect"
import { SqlClient } from "effect/sql"
import { join } from "node:path"
import { applyInversion, type InversionProposal, scan } from "../../domain/learning/antiPattern.ts"
import { DAY_MS, sweep as sweepRules } from "../../domain/learning/confidence.ts"
import { injection } from "../../domain/learning/context.ts"
import { findDuplicate } from "../../domain/learning/dedupe.ts"
import { RuleNotFound, RuleRejected } from "../../domain/learning/errors.ts"
import {
  cleanTags,
  INITIAL_CONFIDENCE,
  normalTag,
  type PlaybookRule,
  RULE_ID,
  type SourcedRule
} from "../../domain/learning/rule.ts"
import { entryOf, ruleTextProblem } from "../../domain/learning/yaml.ts"
import { agentFolder } from "../../domain/sandbox/spec.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import {
  type ContextQuery,
  Playbook,
  type ProposalResult,
  type ReplaceReport,
  type RuleProposal,
  type UserRuleLimits
} from "../../services/Playbook.ts"
import { RuleVotes, scopeOf } from "../../services/RuleVotes.ts"
import { makeFeedback } from "./playbookFeedback.ts"
import { makeTableRules, tableLabel } from "./pgPlaybookRules.ts"
import { type Change, makeFiles, type WriteHooks } from "./playbookFile.ts"
import * as SqliteRuleVotes from "./SqliteRuleVotes.ts"
import { isPostgres } from "../sql/dialect.ts"

/** A file holds at most this many rules: past it, proposals are refused until an operator removes some. */
export const MAX_RULES_PER_FILE = 1000
/** A rule keeps the latest this many source entries (a rule proposed again and again would grow without end). */
export const MAX_SOURCE_ENTRIES = 20

export const PLAYBOOK_FILE = "playbook.yaml"

/** `rule_<base36 time>_<4 base36 random>`. */
const newRuleId = (now: number) =>
  Effect.map(Random.nextBetween(0, 36 ** 4), (r) => `rule_${now.toString(36)}_${Math.floor(r).toString(36).padStart(4, "0")}`)

const withoutUser = (rule: PlaybookRule): PlaybookRule => {
  const { user: _, ...rest } = rule
  return rest
}

const union = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => [...new Set([...a, ...b])]

/** A proposal's text, checked: one line of plain text, not empty, not too long. */
const checkText = (text: string) => {
  const t = text.trim()
  const problem = ruleTextProblem(t)
  return problem === undefined ? Effect.succeed(t) : Effect.fail(new RuleRejected({ reason: problem }))
}

const unchanged = <A>(result: A): Change<A> => ({ rules: undefined, result })

/** A rule as it is written (two rules that compare equal read back the same). */
const sameAs = (rule: PlaybookRule): string => JSON.stringify(entryOf(rule))

/** Why `user` may not have one more rule among `rules` at `now` under `limits`, or undefined. */
const overLimit = (rules: ReadonlyArray<PlaybookRule>, user: string, limits: UserRuleLimits, now: number): string | undefined => {
  const own = rules.filter((r) => r.user === user)
  if (own.length >= limits.total) return `this user already has ${limits.total} rules; an operator must prune them first`
  if (own.filter((r) => r.createdAt > now - DAY_MS).length >= limits.perDay) return `at most ${limits.perDay} new rules per user per day; try again tomorrow`
  return undefined
}

export interface Options {
  readonly home: string
  /** The workspaces root, where agents' folders are (default `home`/workspaces; AppConfig's `workspaces`). */
  readonly workspaces?: string | undefined
  /** Tests only: steps of a write that can be made to fail. */
  readonly hooks?: WriteHooks
  /** The database: on PostgreSQL the rules live in its playbook_rules table, not in files (undefined, SQLite: files). */
  readonly sql?: SqlClient.SqlClient | undefined
}

/**
 * The Playbook on the files under `options.home` (or PostgreSQL's playbook_rules table), with users'
 * feedback on shared rules in RuleVotes.
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const votes = yield* RuleVotes
    const onTable = options.sql !== undefined && isPostgres(options.sql)
    const table = options.sql !== undefined && onTable ? makeTableRules(options.sql) : undefined
    const files = table ?? makeFiles(options.hooks)
    // On the table the seam's "path" is the scope (RuleVotes' scopeOf: '' global, the agent's id).
    const globalPath = onTable ? scopeOf(undefined) : join(options.home, PLAYBOOK_FILE)
    const agentPath = (agentId: string) => (onTable ? scopeOf(agentId) : join(agentFolder(options.workspaces ?? join(options.home, "workspaces"), agentId), PLAYBOOK_FILE))
    const described = (path: string) => (onTable ? tableLabel(path) : path)
    const fileOf = (agentId: string | undefined) => (agentId === undefined ? globalPath : agentPath(agentId))
    const where = (agentId: string | undefined) => (agentId === undefined ? "the global playbook" : `agent ${agentId}'s playbook`)

    const list = Effect.fn("Playbook.list")(function*(agentId: string | undefined) {
      const global = yield* files.read(globalPath)
      if (agentId === undefined) return global.map((rule): SourcedRule => ({ rule, source: "global" }))
      const own = yield* files.read(agentPath(agentId))
      const ids = new Set(own.map((r) => r.id))
      return [
        ...own.map((rule): SourcedRule => ({ rule, source: "agent" })),
        ...global.filter((r) => !ids.has(r.id)).map((rule): SourcedRule => ({ rule, source: "global" }))
      ]
    })

    const get = Effect.fn("Playbook.get")(function*(agentId: string | undefined, id: string) {
      const found = (yield* list(agentId)).find((s) => s.rule.id === id)
      if (found === undefined) {
        return yield* new RuleNotFound({ id, where: agentId === undefined ? where(undefined) : `${where(agentId)} or the global one` })
      }
      return found
    })

    const tags = Effect.fn("Playbook.tags")(function*(agentId: string) {
      return new Set((yield* list(agentId)).flatMap((s) => s.rule.tags.map(normalTag)).filter((t) => t !== "")) as ReadonlySet<string>
    })

    const { feedback, view } = makeFeedback({ files, votes, globalPath, agentPath, list })

    const context = Effect.fn("Playbook.context")(function*(query: ContextQuery) {
      return injection((yield* view(query.agentId, query.userId)).map((s) => s.rule), query.userId, query.tags, yield* Clock.currentTimeMillis)
    })

    const votesOn = Effect.fn("Playbook.votes")(function*(agentId: string | undefined, id: string) {
      const found = yield* get(agentId, id)
      return yield* votes.tally({ scope: scopeOf(found.source === "agent" ? agentId : undefined), ruleId: id })
    })

    const propose = Effect.fn("Playbook.propose")(function*(proposal: RuleProposal) {
      const text = yield* checkText(proposal.text)
      const tags = cleanTags(proposal.tags)
      if (proposal.user !== undefined && proposal.user.trim() === "") return yield* new RuleRejected({ reason: "the user is empty" })
      const now = yield* Clock.currentTimeMillis
      const candidateId = yield* newRuleId(now)
      return yield* files.update(fileOf(proposal.agentId), (rules) =>
        Effect.gen(function*() {
          // The same users: a rule for this user, or one for everyone (which this user sees too).
          const peers = rules.filter((r) => r.user === undefined || r.user === proposal.user)
          const twin = findDuplicate(peers, (r) => r.text, text)
          // A user's proposal that repeats a rule other users rely on changes nothing in it: tags added
          // by one (possibly hostile) user would change when the rule is chosen for everyone else.
          if (twin !== undefined && twin.user !== proposal.user) return unchanged<ProposalResult>({ rule: twin, created: false, addedTags: [] })
          if (twin !== undefined) {
            const merged: PlaybookRule = {
              ...twin,
              sourceEntries: union(twin.sourceEntries, proposal.sourceEntries).slice(-MAX_SOURCE_ENTRIES),
              tags: cleanTags([...twin.tags, ...tags])
            }
            const same = merged.sourceEntries.join("\n") === twin.sourceEntries.join("\n") && merged.tags.join("\n") === twin.tags.join("\n")
            const result: ProposalResult = { rule: merged, created: false, addedTags: merged.tags.filter((t) => !twin.tags.includes(t)) }
            return same ? unchanged(result) : { rules: rules.map((r) => (r.id === twin.id ? merged : r)), result }
          }
          // Checked here, in the same step as the insert: proposals made at once cannot all pass a check made before.
          const over = proposal.user === undefined || proposal.limits === undefined ? undefined : overLimit(rules, proposal.user, proposal.limits, now)
          if (over !== undefined) return yield* new RuleRejected({ reason: over })
          if (rules.length >= MAX_RULES_PER_FILE) {
            return yield* new RuleRejected({ reason: `${where(proposal.agentId)} holds ${rules.length} rules, the most it may; remove some first (anna playbook remove)` })
          }
          const ids = new Set(rules.map((r) => r.id))
          let id = candidateId
          while (ids.has(id) || !RULE_ID.test(id)) id = yield* newRuleId(now)
          const rule: PlaybookRule = {
            id,
            text,
            confidence: INITIAL_CONFIDENCE,
            maturity: "nascent",
            successCount: 0,
            failureCount: 0,
            antiPattern: proposal.antiPattern,
            sourceEntries: [...new Set(proposal.sourceEntries)].slice(-MAX_SOURCE_ENTRIES),
            tags,
            createdAt: now,
            lastAppliedAt: null,
            ...(proposal.user === undefined ? {} : { user: proposal.user })
          }
          return { rules: [...rules, rule], result: { rule, created: true, addedTags: [] } as ProposalResult }
        })
      )
    })

    const sweep = Effect.fn("Playbook.sweep")(function*(agentId: string | undefined) {
      const now = yield* Clock.currentTimeMillis
      return yield* files.update(fileOf(agentId), (rules) => {
        const swept = sweepRules(rules, now)
        const moved = swept.report.promoted + swept.report.demoted > 0
        return Effect.succeed(moved ? { rules: swept.rules, result: swept.report } : unchanged(swept.report))
      })
    })

    const review = Effect.fn("Playbook.review")(function*(agentId: string | undefined) {
      return scan(yield* files.read(fileOf(agentId)), yield* Clock.currentTimeMillis)
    })

    const apply = Effect.fn("Playbook.apply")(function*(agentId: string | undefined, ids: ReadonlyArray<string>) {
      const now = yield* Clock.currentTimeMillis
      return yield* files.update(fileOf(agentId), (rules) =>
        Effect.gen(function*() {
          const proposals = scan(rules, now)
          const chosen: Array<InversionProposal> = []
          for (const id of new Set(ids)) {
            const p = proposals.find((x) => x.original.id === id)
            if (p === undefined) return yield* new RuleNotFound({ id, where: `the inversion proposals of ${where(agentId)} (anna playbook review)` })
            chosen.push(p)
          }
          return { rules: chosen.length === 0 ? undefined : chosen.reduce(applyInversion, rules), result: chosen as ReadonlyArray<InversionProposal> }
        })
      )
    })

    const promote = Effect.fn("Playbook.promote")(function*(agentId: string, id: string, options: { readonly global: boolean }) {
      const own = (yield* files.read(agentPath(agentId))).find((r) => r.id === id)
      if (own === undefined) {
        // A user-scoped rule of the global playbook is promoted where it is.
        const inGlobal = (yield* files.read(globalPath)).find((r) => r.id === id)
        if (inGlobal === undefined) return yield* new RuleNotFound({ id, where: `${where(agentId)} or the global one` })
        return yield* files.update(globalPath, (rules) => changeRule(rules, id, withoutUser, where(undefined)))
      }
      if (!options.global) return yield* files.update(agentPath(agentId), (rules) => changeRule(rules, id, withoutUser, where(agentId)))
      // Global first: should the second write fail, the rule is in both files and the agent's copy shadows an equal one.
      const moved = withoutUser(own)
      yield* files.update(globalPath, (rules) =>
        Effect.succeed({ rules: [...rules.filter((r) => r.id !== id), moved], result: moved })
      )
      yield* files.update(agentPath(agentId), (rules) => Effect.succeed({ rules: rules.filter((r) => r.id !== id), result: undefined }))
      return moved
    })

    const remove = Effect.fn("Playbook.remove")(function*(agentId: string | undefined, id: string) {
      const removed = yield* files.update(fileOf(agentId), (rules) => {
        const found = rules.find((r) => r.id === id)
        if (found === undefined) return Effect.fail(new RuleNotFound({ id, where: where(agentId) }))
        return Effect.succeed({ rules: rules.filter((r) => r.id !== id), result: found })
      })
      // A rule written later with the same id starts without the old rule's votes (best effort: the rule is gone either way).
      yield* votes.forget({ scope: scopeOf(agentId), ruleId: id }).pipe(
        Effect.catch((e) => Effect.logWarning(`playbook: feedback on the removed rule ${id} was not forgotten`, e.message))
      )
      return removed
    })

    // Export and import are how rows of the table that do not decode are fixed: they are reported
    // and left out (export), or replaced (import), rather than refused as everywhere else.
    const rules = Effect.fn("Playbook.rules")(function*(agentId: string | undefined) {
      if (table !== undefined) {
        const read = yield* table.readAll(fileOf(agentId))
        return { rules: read.rules, invalid: read.broken }
      }
      return { rules: yield* files.read(fileOf(agentId)), invalid: [] }
    })

    const replace = Effect.fn("Playbook.replace")(function*(agentId: string | undefined, next: ReadonlyArray<PlaybookRule>) {
      const change = (current: ReadonlyArray<PlaybookRule>) => {
        const before = new Map(current.map((r) => [r.id, sameAs(r)]))
        const ids = new Set(next.map((r) => r.id))
        const added = next.filter((r) => !before.has(r.id)).map((r) => r.id)
        const changed = next.filter((r) => before.has(r.id) && before.get(r.id) !== sameAs(r)).map((r) => r.id)
        const removed = current.filter((r) => !ids.has(r.id)).map((r) => r.id)
        const result = { added, changed, removed, unchanged: next.length - added.length - changed.length }
        // Written unless the same rules are there in the same order.
        const same = added.length + changed.length + removed.length === 0 && current.every((r, i) => next[i]?.id === r.id)
        return Effect.succeed(same ? unchanged(result) : { rules: next, result })
      }
      const done = table === undefined
        ? { result: yield* files.update(fileOf(agentId), change), broken: [] }
        : yield* table.updateAll(fileOf(agentId), change)
      const report: ReplaceReport = { ...done.result, invalid: done.broken.map((b) => b.id) }
      // As `remove`: a rule written later with one of these ids starts without the old rule's votes.
      for (const id of report.removed) {
        yield* votes.forget({ scope: scopeOf(agentId), ruleId: id }).pipe(
          Effect.catch((e) => Effect.logWarning(`playbook: feedback on the removed rule ${id} was not forgotten`, e.message))
        )
      }
      return report
    })

    const paths = (agentId: string | undefined) =>
      agentId === undefined ? { global: described(globalPath) } : { agent: described(agentPath(agentId)), global: described(globalPath) }

    return Playbook.of({
      list,
      get,
      tags,
      view,
      context,
      propose,
      feedback,
      votes: votesOn,
      sweep,
      review,
      apply,
      promote,
      remove,
      rules,
      replace,
      paths
    })
  })

/** The rules with rule `id` changed by `f` (RuleNotFound when it is not there). */
const changeRule = (rules: ReadonlyArray<PlaybookRule>, id: string, f: (r: PlaybookRule) => PlaybookRule, where: string) => {
  const found = rules.find((r) => r.id === id)
  if (found === undefined) return Effect.fail(new RuleNotFound({ id, where }))
  const changed = f(found)
  return Effect.succeed({ rules: rules.map((r) => (r.id === id ? changed : r)), result: changed })
}

/** Needs AppConfig and SqlClient (users' feedback on shared rules: SqliteRuleVotes; on PostgreSQL the rules too). */
export const layer = Layer.effect(
  Playbook,
  Effect.gen(function*() {
    const config = yield* AppConfig
    return yield* make({ home: config.home, workspaces: config.workspaces, sql: yield* SqlClient.SqlClient })
  })
).pipe(Layer.provide(SqliteRuleVotes.layer))
