/**
 * UserRemoval over the stores (see the contract for what happens to each kind of data). The order:
 * the user's jobs first (nothing of theirs starts again), then the user itself with their logins, in
 * one transaction that records the removal as unfinished (ConfigStore.removeUser); then each store's
 * part. A step that fails does not stop the others: everything that can go goes, and the removal
 * stays unfinished with every reason given (RemovalUnfinished), for the operator to fix and run again.
 */
import { Effect, Layer, Option } from "effect"
import { isRemovedUserId } from "../../domain/config/removedUser.ts"
import { InvalidConfig, RemovalUnfinished } from "../../domain/config/errors.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import { ConfigStore, type Removal } from "../../services/ConfigStore.ts"
import { Diary } from "../../services/Diary.ts"
import { JobStore } from "../../services/JobStore.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import { Playbook } from "../../services/Playbook.ts"
import { RuleVotes } from "../../services/RuleVotes.ts"
import { SkillStats } from "../../services/SkillStats.ts"
import { UsageLog } from "../../services/UsageLog.ts"
import { type SessionChoice, UserRemoval, type UserRemovalReport } from "../../services/UserRemoval.ts"
import { agentFolders, removeUserWorkspaces } from "./userWorkspaces.ts"

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

export const make = Effect.gen(function*() {
  const config = yield* ConfigStore
  const agents = yield* AgentStore
  const jobs = yield* JobStore
  const memory = yield* MemoryStore
  const diary = yield* Diary
  const skills = yield* SkillStats
  const usage = yield* UsageLog
  const playbook = yield* Playbook
  const votes = yield* RuleVotes
  const workspaceRoot = (yield* AppConfig).workspaces

  /** The user's jobs (owned, or delivering to them), removed with their history kept; their ids. */
  const retireJobs = (userId: string) =>
    Effect.gen(function*() {
      const theirs = (yield* jobs.list()).filter((j) => j.userId === userId || j.deliverUser === userId)
      for (const j of theirs) yield* jobs.retire(j.id)
      return theirs.map((j) => j.id)
    })

  /** The user's own rules, from every agent's playbook and the global one, through the Playbook. */
  const removeRules = (userId: string) =>
    Effect.gen(function*() {
      // An agent removed from the configuration keeps its folder (and playbook): an agent made again
      // with its id would find the rules there.
      const folders = yield* Effect.sync(() => {
        try {
          return agentFolders(workspaceRoot)
        } catch {
          return []
        }
      })
      const files = [undefined, ...new Set([...(yield* agents.list).map((a) => a.id), ...folders])]
      let removed = 0
      const failed: Array<string> = []
      for (const agentId of files) {
        const where = agentId === undefined ? "the global playbook" : `agent ${agentId}'s playbook`
        const rules = yield* Effect.result(playbook.list(agentId))
        if (rules._tag === "Failure") {
          failed.push(`their rules could not be removed from ${where} (${rules.failure.message})`)
          continue
        }
        // `list(agent)` also gives the global rules the agent does not shadow: those are the global file's.
        const own = rules.success.filter((s) => s.rule.user === userId && (agentId === undefined) === (s.source === "global"))
        for (const s of own) {
          const r = yield* Effect.result(playbook.remove(agentId, s.rule.id))
          if (r._tag === "Success") removed++
          else if (r.failure._tag !== "RuleNotFound") failed.push(`rule ${s.rule.id} could not be removed from ${where} (${r.failure.message})`)
        }
      }
      return { removed, failed }
    })

  /** Takes the id out of every access list that names it (a new user of the id gets no access of the old one's). */
  const removeFromAccessLists = (userId: string) =>
    Effect.gen(function*() {
      const named: Array<string> = []
      for (const a of yield* agents.list) {
        const access = a.access
        if (access?.kind !== "users" || !access.users.includes(userId)) continue
        yield* agents.update(a.id, { access: { kind: "users", users: access.users.filter((u) => u !== userId) } })
        named.push(a.id)
      }
      return named
    })

  const remove = Effect.fn("UserRemoval.remove")(function*(userId: string, sessions: SessionChoice | undefined) {
    const report: Mutable<UserRemovalReport> = {
      userId,
      removedAs: "",
      sessions: "kept",
      resumed: false,
      identities: 0,
      tokens: 0,
      chatStates: 0,
      account: false,
      jobs: [],
      keptSessions: [],
      deletedSessions: [],
      profiles: 0,
      diaryEntries: 0,
      skillStats: 0,
      usageRecords: 0,
      ruleVotes: 0,
      rules: 0,
      workspaces: [],
      accessLists: []
    }
    let removal: Removal
    if (Option.isSome(yield* config.getUser(userId))) {
      if (sessions === undefined) {
        return yield* new InvalidConfig({ reason: `choose what happens to ${userId}'s sessions: keep them (operators can still read them) or delete them` })
      }
      // Jobs first: none of theirs starts while the rest goes.
      report.jobs = yield* retireJobs(userId)
      const removed = yield* config.removeUser(userId, { sessions })
      removal = removed.removal
      Object.assign(report, { identities: removed.identities, tokens: removed.tokens, chatStates: removed.chatStates, account: removed.account })
    } else {
      const unfinished = yield* config.unfinishedRemoval(userId)
      if (Option.isNone(unfinished)) {
        return yield* new InvalidConfig({
          reason: isRemovedUserId(userId)
            ? `"${userId}" is a removed user's id, not a user (its sessions: anna memory sessions --user ${userId})`
            : `no user "${userId}" (see: anna user list)`
        })
      }
      removal = unfinished.value
      if (sessions !== undefined && sessions !== removal.sessions) {
        return yield* new InvalidConfig({
          reason: `the removal of ${userId} began with its sessions to ${removal.sessions}; finish it with --${removal.sessions}-sessions`
        })
      }
      report.resumed = true
      report.jobs = yield* retireJobs(userId)
    }
    const removedAs = removal.removedAs
    const keep = removal.sessions === "keep"
    Object.assign(report, { removedAs, sessions: keep ? "kept" : "deleted" })

    // Each part is tried even when another failed: as much as can go goes.
    const failed: Array<string> = []
    const attempt = <A, E extends { readonly message: string }>(what: string, step: Effect.Effect<A, E>, use: (a: A) => void) =>
      Effect.flatMap(Effect.result(step), (r) =>
        Effect.sync(() => {
          if (r._tag === "Success") use(r.success)
          else failed.push(`${what} could not be ${keep ? "moved" : "removed"} (${r.failure.message})`)
        }))

    if (keep) {
      yield* attempt("their sessions", memory.retireUser(userId, removedAs), (r) => {
        report.keptSessions = r.sessions.map((s) => s.to)
        report.profiles = r.profiles
      })
    } else {
      yield* attempt("their sessions", Effect.gen(function*() {
        const deleted: Array<UserRemovalReport["deletedSessions"][number]> = []
        for (const c of yield* memory.listConversations({ userId })) {
          deleted.push(yield* memory.deleteConversation(c.sessionKey).pipe(
            // Gone meanwhile (another run of the removal, `anna memory delete`): nothing left to do.
            Effect.catchTag("SessionNotFound", () => Effect.succeed({ sessionKey: c.sessionKey, messages: 0, summaries: 0 }))
          ))
        }
        // The agents' notes about the user are drawn from those sessions: they go with them.
        return { deleted, profiles: yield* memory.deleteProfiles(userId) }
      }), (r) => {
        report.deletedSessions = r.deleted
        report.profiles = r.profiles
      })
    }
    yield* attempt("their diary", diary.removeUser(userId, keep ? removedAs : undefined), (r) => {
      report.diaryEntries = r.entries
    })
    yield* attempt("their usage", usage.retireUser(userId, removedAs), (n) => {
      report.usageRecords = n
    })
    yield* attempt("their feedback on shared rules", votes.moveUser(userId, removedAs), (n) => {
      report.ruleVotes = n
    })
    // The heartbeat's run history is kept under the user's id: it stays with them.
    yield* attempt("their heartbeat's run history", jobs.moveUserHistory(userId, removedAs), () => undefined)
    yield* attempt("their skills' records", skills.removeUser(userId), (n) => {
      report.skillStats = n
    })
    yield* attempt("their place in access lists", removeFromAccessLists(userId), (named) => {
      report.accessLists = named
    })
    const rules = yield* removeRules(userId).pipe(
      Effect.catch((e) => Effect.succeed({ removed: 0, failed: [`their rules could not be removed (${e.message})`] }))
    )
    report.rules = rules.removed
    failed.push(...rules.failed)
    const workspaces = yield* removeUserWorkspaces(workspaceRoot, userId)
    report.workspaces = workspaces.removed
    failed.push(...workspaces.failed)

    if (failed.length > 0) return yield* new RemovalUnfinished({ userId, reasons: failed })
    yield* config.finishRemoval(removedAs)
    return report as UserRemovalReport
  })

  return UserRemoval.of({ remove })
})

/**
 * UserRemoval; needs ConfigStore, AgentStore, JobStore, MemoryStore, Diary, SkillStats, UsageLog,
 * Playbook, RuleVotes and AppConfig (where the workspaces are).
 */
export const layer = Layer.effect(UserRemoval, make)
