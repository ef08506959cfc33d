/**
 * The Learning service (issue 15): the loop around turns. Before a turn the rules that fit go into
 * the system prompt and are recorded as used; when a burst ends, a background worker reflects on it
 * (the summary model, else the heuristic), stores the diary entry, proposes its rules (scoped to the
 * user they were learned from) and feeds the entry's status back to the rules and skills the burst
 * used. Everything is off for an agent with the plugin `learning` off.
 *
 * Background work: one queue and one worker fiber, forked in the layer's scope. A session queued
 * twice before its turn comes is reflected once. Reflection of a session is serialised (the worker
 * and `reflect` take the session's lock `reflect\0{key}`), so a burst is reflected once. When the
 * layer closes the worker is interrupted: a burst it did not reflect keeps its messages unreflected
 * in the database (the next reflection of the session covers them), so nothing is lost.
 *
 * Why a mixed status settles the uses without feedback: it says neither that the rules helped nor
 * that they hurt, and the same rules would otherwise wait for a signal from a later burst they had
 * no part in.
 */
import { Cause, Clock, Deferred, Effect, Layer, Option, Queue } from "effect"
import type { Outcome } from "../../domain/learning/confidence.ts"
import type { BurstTrigger, DiaryEntry } from "../../domain/learning/diary.ts"
import { ReflectionSkipped } from "../../domain/learning/errors.ts"
import { heuristicEntry } from "../../domain/learning/heuristic.ts"
import { injection } from "../../domain/learning/context.ts"
import { LEARNING_PLUGIN, normalTag } from "../../domain/learning/rule.ts"
import { conversationTags, RECENT_ENTRIES_FOR_TAGS } from "../../domain/learning/tags.ts"
import type { AgentStore } from "../../services/AgentStore.ts"
import { Diary } from "../../services/Diary.ts"
import { type FeedbackReport, Learning, type TurnChat } from "../../services/Learning.ts"
import { MemoryStore } from "../../services/MemoryStore.ts"
import { Playbook } from "../../services/Playbook.ts"
import { PluginStore } from "../../services/PluginStore.ts"
import type { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import type { ProviderStore } from "../../services/ProviderStore.ts"
import { SessionLocks } from "../../services/SessionLocks.ts"
import type { SkillStats } from "../../services/SkillStats.ts"
import type { UsageLog } from "../../services/UsageLog.ts"
import { applyOutcome, entryId, messagesFrom, tooLittle } from "./reflectBurst.ts"
import { reflectWithModel } from "./reflectModel.ts"

/** The plugin that switches the loop per agent (`anna plugin disable learning --agent A`). */
export const PLUGIN_ID = LEARNING_PLUGIN

const noFeedback: FeedbackReport = { rules: [], forYou: [], skills: [] }

export const make = Effect.gen(function*() {
  const diary = yield* Diary
  const playbook = yield* Playbook
  const memory = yield* MemoryStore
  const plugins = yield* PluginStore
  const locks = yield* SessionLocks
  const services = yield* Effect.context<
    Diary | Playbook | SkillStats | MemoryStore | ProviderRegistry | UsageLog | AgentStore | ProviderStore
  >()

  const enabled = (agentId: string) => plugins.enabledFor(PLUGIN_ID, agentId)

  const beforeTurn = Effect.fn("Learning.beforeTurn")(
    function*(chat: TurnChat, message: string) {
      if (!(yield* enabled(chat.agentId))) return ""
      // The playbook is read once per turn (files are cached: a stat each), as this user is given it
      // (their own feedback on shared rules applied); tags and selection come from it.
      const rules = (yield* playbook.view(chat.agentId, chat.userId)).map((s) => s.rule)
      const known = new Set(rules.flatMap((r) => r.tags.map(normalTag)))
      // No rule has a tag: nothing could be chosen, so spare the diary read and the selection.
      if (known.size === 0) return ""
      const recent = yield* diary.list({ sessionKey: chat.sessionKey, limit: RECENT_ENTRIES_FOR_TAGS })
      const tags = conversationTags(message, known, recent.flatMap((e) => e.tags))
      if (tags.length === 0) return ""
      const context = injection(rules, chat.userId, tags, yield* Clock.currentTimeMillis)
      const chosen = [...context.rules, ...context.antiPatterns]
      if (chosen.length > 0) {
        const at = yield* Clock.currentTimeMillis
        yield* diary.recordUses(chosen.map((s) => ({
          sessionKey: chat.sessionKey,
          agentId: chat.agentId,
          userId: chat.userId,
          kind: "rule" as const,
          ref: s.rule.id,
          scope: "",
          at
        })))
      }
      return context.text
    },
    (effect, chat) =>
      Effect.catch(effect, (e) => Effect.as(Effect.logWarning(`learning: no playbook rules for a turn of ${chat.sessionKey}`, e.message), ""))
  )

  const skillUsed = Effect.fn("Learning.skillUsed")(
    function*(chat: TurnChat, name: string, scope: "operator" | "user") {
      if (!(yield* enabled(chat.agentId))) return
      const at = yield* Clock.currentTimeMillis
      yield* diary.recordUses([{ sessionKey: chat.sessionKey, agentId: chat.agentId, userId: chat.userId, kind: "skill", ref: name, scope, at }])
    },
    (effect, chat, name) => Effect.catch(effect, (e) => Effect.logWarning(`learning: skill use ${name} in ${chat.sessionKey} not recorded`, e.message))
  )

  /** Reflects on the session's burst now (the caller holds the session's reflect lock). */
  const reflectNow = Effect.fn("Learning.reflectNow")(function*(sessionKey: string, trigger: BurstTrigger) {
    const conversation = yield* memory.findConversation(sessionKey)
    if (Option.isNone(conversation)) return yield* new ReflectionSkipped({ sessionKey, reason: "no such session" })
    const { id: conversationId, agentId, userId } = conversation.value
    if (!(yield* enabled(agentId))) {
      return yield* new ReflectionSkipped({ sessionKey, reason: `learning is off for agent ${agentId} (anna plugin enable ${PLUGIN_ID} --agent ${agentId})` })
    }
    const latest = yield* diary.latest(sessionKey)
    const burst = yield* messagesFrom(conversationId, Option.match(latest, { onNone: () => 0, onSome: (e) => e.toSeq + 1 })).pipe(
      Effect.provide(services)
    )
    const first = burst[0]
    const last = burst[burst.length - 1]
    if (first === undefined || last === undefined) return Option.none<DiaryEntry>()
    const little = tooLittle(burst)
    if (little !== undefined) return yield* new ReflectionSkipped({ sessionKey, reason: `nothing to reflect on: ${little}` })

    const messages = burst.map((m) => m.message)
    const answer = yield* reflectWithModel(sessionKey, messages).pipe(Effect.provide(services))
    if (answer._tag === "NoAnswer") yield* Effect.logWarning(`learning: the heuristic writes the diary entry of ${sessionKey}: ${answer.reason}`)
    const fields = answer._tag === "Answered" ? answer.reflection : heuristicEntry(messages)
    const createdAt = yield* Clock.currentTimeMillis
    const entry: DiaryEntry = {
      id: yield* entryId(createdAt),
      sessionKey,
      agentId,
      userId,
      fromSeq: first.seq,
      toSeq: last.seq,
      accomplishments: fields.accomplishments,
      decisions: fields.decisions,
      challenges: fields.challenges,
      keyLearnings: fields.keyLearnings,
      tags: fields.tags,
      status: fields.status,
      qualityScore: fields.qualityScore,
      createdAt,
      source: answer._tag === "Answered" ? "model" : "heuristic",
      trigger
    }
    // Stored, proposed, settled and fed back as one step a shutdown cannot cut in two: an entry whose
    // uses stayed open would hand them to the next burst's outcome.
    yield* Effect.uninterruptible(Effect.gen(function*() {
      yield* diary.add(entry)

      // Rules learned from one user's conversation are that user's until an operator promotes them.
      const rules = answer._tag === "Answered" ? answer.reflection.rules : []
      for (const rule of rules) {
        yield* playbook.propose({ agentId, user: userId, text: rule.text, tags: rule.tags, sourceEntries: [entry.id], antiPattern: rule.antiPattern }).pipe(
          Effect.catch((e) => Effect.logWarning(`learning: rule proposed by ${entry.id} not added`, e.message))
        )
      }

      // The burst's uses only: a turn that started while this reflection ran belongs to the next burst.
      const uses = yield* diary.settleUses(sessionKey, entry.id, last.createdAt)
      if (entry.status !== "mixed") yield* applyOutcome(agentId, uses, entry.status).pipe(Effect.provide(services))
    }))
    return Option.some(entry)
  })

  const reflect = (sessionKey: string, trigger: BurstTrigger) => locks.withLock(`reflect\0${sessionKey}`)(reflectNow(sessionKey, trigger))

  // The background queue. `pending`: sessions queued and not yet taken (a second endBurst is a no-op);
  // `busy`: bursts queued or being reflected; `drained` completes when busy falls back to 0.
  const queue = yield* Queue.unbounded<{ readonly sessionKey: string; readonly trigger: BurstTrigger }>()
  const pending = new Set<string>()
  let busy = 0
  let drained = Deferred.makeUnsafe<void>()
  Deferred.doneUnsafe(drained, Effect.void)

  const endBurst = Effect.fn("Learning.endBurst")(function*(sessionKey: string, trigger: BurstTrigger) {
    if (pending.has(sessionKey)) return
    pending.add(sessionKey)
    if (busy === 0) drained = Deferred.makeUnsafe<void>()
    busy++
    yield* Queue.offer(queue, { sessionKey, trigger })
  })

  const step = Effect.gen(function*() {
    const job = yield* Queue.take(queue)
    pending.delete(job.sessionKey)
    yield* reflect(job.sessionKey, job.trigger).pipe(
      Effect.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
        const skipped = cause.reasons.find(Cause.isFailReason)?.error
        return skipped?._tag === "ReflectionSkipped"
          ? Effect.logDebug(skipped.message)
          : Effect.logWarning(`learning: reflection of ${job.sessionKey} failed`, cause)
      }),
      Effect.ensuring(Effect.suspend(() => {
        busy--
        return busy === 0 ? Deferred.succeed(drained, undefined) : Effect.void
      }))
    )
  })
  yield* Effect.forkScoped(Effect.forever(step))
  // Whoever waits for the queue is not left waiting for a worker that is gone.
  yield* Effect.addFinalizer(() => Effect.suspend(() => Deferred.succeed(drained, undefined)))

  const feedback = Effect.fn("Learning.feedback")(function*(chat: TurnChat, outcome: Outcome) {
    if (!(yield* enabled(chat.agentId))) return noFeedback
    const now = yield* Clock.currentTimeMillis
    const uses = yield* diary.settleUses(chat.sessionKey, `feedback:${now}`)
    return yield* applyOutcome(chat.agentId, uses, outcome).pipe(Effect.provide(services))
  })

  return Learning.of({
    beforeTurn,
    skillUsed,
    endBurst,
    reflect,
    feedback,
    idle: Effect.suspend(() => Deferred.await(drained))
  })
})

/**
 * Needs Diary, Playbook, SkillStats, MemoryStore, PluginStore, SessionLocks, ProviderRegistry,
 * UsageLog, AgentStore and ProviderStore.
 */
export const layer = Layer.effect(Learning, make)
