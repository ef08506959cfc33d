/**
 * `/api/playbook` handlers: `anna playbook list|show|feedback|sweep|review|apply|promote|remove` with
 * the CLI's checks, for the principal (see src/domain/admin/groups/playbook.ts).
 *
 * A `user`'s rules are exactly what the chat's `playbook` tool searches for them: on each agent they
 * may use (its access policy, agentAccess) with learning on, `Playbook.view` — their own view of the
 * shared rules — keeping the rules visible to them (theirs, and those for every user). Anything else
 * is "not found", so the ids of other users' rules cannot be probed. They may remove a rule of their
 * own; a shared one is the operator's (403).
 *
 * A playbook file with a mistake is the operator's to fix: an admin gets its line and path (500,
 * `playbook_file`), a user only that the playbook cannot be read now (the path stays in the log).
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import type { RuleView } from "../../domain/admin/groups/playbook.ts"
import { CurrentPrincipal, Forbidden, ServerError } from "../../domain/admin/security.ts"
import type { InversionProposal } from "../../domain/learning/antiPattern.ts"
import { decayed } from "../../domain/learning/confidence.ts"
import { CONSENSUS_USERS } from "../../domain/learning/consensus.ts"
import { normaliseText } from "../../domain/learning/dedupe.ts"
import { RuleNotFound } from "../../domain/learning/errors.ts"
import { LEARNING_PLUGIN, normalTag, type PlaybookRule, visibleTo } from "../../domain/learning/rule.ts"
import type { Principal } from "../../services/Accounts.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Playbook } from "../../services/Playbook.ts"
import { PluginStore } from "../../services/PluginStore.ts"
import { agentAccess } from "./agentAccess.ts"
import { answer } from "./errors.ts"

/** A rule and the playbook it lives in (undefined: the global one). */
interface Located {
  readonly rule: PlaybookRule
  readonly agent: string | undefined
}

const toView = (l: Located, now: number): RuleView => ({
  id: l.rule.id,
  agent: l.agent ?? null,
  user: l.rule.user ?? null,
  text: l.rule.text,
  confidence: l.rule.confidence,
  confidenceNow: Math.round(decayed(l.rule, now) * 10_000) / 10_000,
  maturity: l.rule.maturity,
  successCount: l.rule.successCount,
  failureCount: l.rule.failureCount,
  antiPattern: l.rule.antiPattern,
  tags: l.rule.tags,
  sourceEntries: l.rule.sourceEntries,
  createdAt: l.rule.createdAt,
  lastAppliedAt: l.rule.lastAppliedAt
})

const proposalView = (agent: string | undefined) => (p: InversionProposal) => ({
  id: p.original.id,
  agent: agent ?? null,
  text: p.original.text,
  failures: p.original.failureCount,
  successes: p.original.successCount,
  inverted: { id: p.inverted.id, text: p.inverted.text }
})

const isFileTrouble = (e: unknown): e is { readonly _tag: string; readonly message: string } =>
  typeof e === "object" && e !== null && "_tag" in e && (e._tag === "PlaybookInvalid" || e._tag === "PlaybookWriteFailed")

export const layer = HttpApiBuilder.group(AdminApi, "playbook", Effect.fn(function*(handlers) {
  const playbook = yield* Playbook
  const agents = yield* AgentStore
  const plugins = yield* PluginStore
  const access = agentAccess(agents, yield* ConfigStore)

  /** `f` for the caller, its failures as the API answers them (a broken file: see the header). */
  const run = <A, E extends { readonly _tag?: string | undefined; readonly message: string }, R>(f: (p: Principal) => Effect.Effect<A, E, R>) =>
    Effect.flatMap(CurrentPrincipal, (p) =>
      answer(Effect.catch(f(p), (e): Effect.Effect<never, E | ServerError> => {
        if (!isFileTrouble(e)) return Effect.fail(e)
        if (p.role === "admin") return Effect.fail(ServerError.of(e.message, "playbook_file"))
        return Effect.logWarning(`admin API: ${e.message}`).pipe(
          Effect.andThen(Effect.fail(ServerError.of("the playbook cannot be read now; the operator must fix its file", "playbook_file")))
        )
      })))

  /** The agent `agent` names (it must exist), or undefined: the global playbook. */
  const agentOf = (agent: string | undefined) => (agent === undefined ? Effect.succeed(undefined) : Effect.map(agents.get(agent), (a) => a.id))

  /**
   * The rules `p` is given (see the header), on `agent` (which they must be allowed to use) or on
   * every agent open to them; a global rule once.
   */
  const mine = Effect.fn("PlaybookApi.mine")(function*(p: Principal, agent: string | undefined) {
    if (agent !== undefined) yield* access.require(p, agent)
    const open = (yield* access.usable(p)).filter((a) => agent === undefined || a.id === agent)
    const learning = yield* Effect.filter(open, (a) => plugins.enabledFor(LEARNING_PLUGIN, a.id))
    const seen = new Set<string>()
    const out: Array<Located> = []
    for (const a of learning) {
      for (const s of yield* playbook.view(a.id, p.userId)) {
        if (!visibleTo(s.rule, p.userId)) continue
        const at = s.source === "agent" ? a.id : undefined
        const key = `${at ?? ""}\0${s.rule.id}`
        if (seen.has(key)) continue
        seen.add(key)
        out.push({ rule: s.rule, agent: at })
      }
    }
    return out
  })

  /** The admin's rules of a playbook (an agent's with the global ones it does not shadow). */
  const all = Effect.fn("PlaybookApi.all")(function*(agent: string | undefined) {
    const agentId = yield* agentOf(agent)
    return (yield* playbook.list(agentId)).map((s): Located => ({ rule: s.rule, agent: s.source === "agent" ? agentId : undefined }))
  })

  /**
   * A rule `p` is given, through `agent`'s playbook (its own rules or the global ones) or, left out,
   * in the global playbook; `exact`: living in that very file (what a removal changes). Else "not found".
   */
  const givenAt = Effect.fn("PlaybookApi.givenAt")(function*(p: Principal, agent: string | undefined, id: string, exact: boolean) {
    const found = (yield* mine(p, agent)).find((l) => l.rule.id === id && (exact || agent === undefined ? l.agent === agent : true))
    if (found === undefined) return yield* new RuleNotFound({ id, where: agent === undefined ? "the global playbook" : `agent ${agent}'s playbook` })
    return found
  })

  const now = Clock.currentTimeMillis

  return handlers
    .handle("list", ({ query }) =>
      run((p) =>
        Effect.gen(function*() {
          if (p.role !== "admin" && query.user !== undefined && query.user !== p.userId) return yield* Forbidden.of("you may list only the rules you are given")
          const rules = p.role === "admin" ? yield* all(query.agent) : yield* mine(p, query.agent)
          const tag = query.tag === undefined ? undefined : normalTag(query.tag)
          const words = normaliseText(query.q ?? "").split(" ").filter((w) => w !== "")
          const t = yield* now
          return rules.filter(({ rule }) =>
            (query.user === undefined || visibleTo(rule, query.user)) &&
            (query.scope === undefined || (query.scope === "shared") === (rule.user === undefined)) &&
            (tag === undefined || rule.tags.includes(tag)) &&
            words.every((w) => normaliseText(`${rule.text} ${rule.tags.join(" ")}`).includes(w))
          ).map((l) => toView(l, t))
        })))
    .handle("show", ({ params, query }) =>
      run((p) =>
        Effect.gen(function*() {
          const located = p.role === "admin"
            ? yield* Effect.gen(function*() {
              const agentId = yield* agentOf(query.agent)
              const s = yield* playbook.get(agentId, params.id)
              return { rule: s.rule, agent: s.source === "agent" ? agentId : undefined } as Located
            })
            : yield* givenAt(p, query.agent, params.id, false)
          const tally = located.rule.user === undefined ? yield* playbook.votes(located.agent, params.id) : undefined
          const paths = playbook.paths(located.agent)
          return {
            rule: toView(located, yield* now),
            votes: tally === undefined ? null : { ...tally, needed: CONSENSUS_USERS },
            file: p.role === "admin" ? (paths.agent ?? paths.global) : null
          }
        })))
    .handle("remove", ({ params, query }) =>
      run((p) =>
        Effect.gen(function*() {
          if (p.role === "admin") {
            const agentId = yield* agentOf(query.agent)
            return toView({ rule: yield* playbook.remove(agentId, params.id), agent: agentId }, yield* now)
          }
          const found = yield* givenAt(p, query.agent, params.id, true)
          if (found.rule.user !== p.userId) return yield* Forbidden.of(`${params.id} is a rule every user is given: only an operator removes it`)
          return toView({ rule: yield* playbook.remove(found.agent, params.id), agent: found.agent }, yield* now)
        })))
    .handle("feedback", ({ params, payload }) =>
      run(() =>
        Effect.gen(function*() {
          const agentId = yield* agentOf(payload.agent)
          const found = yield* playbook.get(agentId, params.id)
          const [done] = yield* playbook.feedback(agentId, [params.id], payload.outcome === "good" ? "success" : "failure", "operator")
          return toView({ rule: done?.rule ?? found.rule, agent: found.source === "agent" ? agentId : undefined }, yield* now)
        })))
    .handle("promote", ({ params, payload }) =>
      run(() =>
        Effect.gen(function*() {
          const agentId = (yield* agents.get(payload.agent)).id
          yield* playbook.promote(agentId, params.id, { global: payload.global === true })
          const s = yield* playbook.get(agentId, params.id)
          return toView({ rule: s.rule, agent: s.source === "agent" ? agentId : undefined }, yield* now)
        })))
    .handle("review", ({ query }) =>
      run(() =>
        Effect.gen(function*() {
          const agentId = yield* agentOf(query.agent)
          return (yield* playbook.review(agentId)).map(proposalView(agentId))
        })))
    .handle("apply", ({ payload }) =>
      run(() =>
        Effect.gen(function*() {
          const agentId = yield* agentOf(payload.agent)
          return (yield* playbook.apply(agentId, payload.ids)).map(proposalView(agentId))
        })))
    .handle("sweep", ({ payload }) => run(() => Effect.flatMap(agentOf(payload.agent), (agentId) => playbook.sweep(agentId))))
}))
