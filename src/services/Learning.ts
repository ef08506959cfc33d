/**
 * Learning — the self-improving loop (issue 15) around turns: before a turn, the playbook rules that
 * fit the conversation go into the system prompt (and are recorded as used in the burst); when a
 * burst ends (the session's runner is reaped when idle, `/new`, or on demand), reflection reads the
 * burst's messages and writes a diary entry with the agent's summary model (a Schema-checked JSON
 * answer, asked once more when it does not decode, and a heuristic fallback when no model answers),
 * proposes the rules it learned (scoped to the user), and feeds the burst's outcome back to the rules
 * injected and the skills used during it. Explicit feedback (`/feedback good|bad`) does the same at once.
 *
 * Reflection on burst end runs in the background (a queue and one worker): it never delays a reply.
 * Everything is per agent behind the plugin `learning` (`anna plugin disable learning --agent A`).
 *
 * Owns the loop. Does not own the stores (Diary, Playbook, SkillStats) or the runners (SessionPool).
 *
 * Layers: `ReflectiveLearning.layer` (src/layers/learning/ReflectiveLearning.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { Outcome } from "../domain/learning/confidence.ts"
import type { BurstTrigger, DiaryEntry } from "../domain/learning/diary.ts"
import type { PlaybookError, ReflectionSkipped } from "../domain/learning/errors.ts"
import type { StorageError } from "../domain/storage/errors.ts"

export interface TurnChat {
  readonly sessionKey: string
  readonly agentId: string
  readonly userId: string
}

export interface FeedbackReport {
  /** Rules that got the outcome. */
  readonly rules: ReadonlyArray<string>
  /** Of those, rules for every user on which the outcome moved only this user's own view (their vote, pending others'). */
  readonly forYou: ReadonlyArray<string>
  /** Skills that got the outcome. */
  readonly skills: ReadonlyArray<string>
}

export class Learning extends Context.Service<Learning, {
  /**
   * The playbook section for this turn's system prompt ("" when no rule fits or learning is off for
   * the agent); the rules chosen are recorded as used in the burst. Never fails: a broken playbook
   * file is logged and the turn goes on without rules.
   */
  readonly beforeTurn: (chat: TurnChat, message: string) => Effect.Effect<string>
  /** A skill the agent used in this session (its outcome is fed back when the burst ends). */
  readonly skillUsed: (chat: TurnChat, name: string, scope: "operator" | "user") => Effect.Effect<void>
  /** The burst of this session ended: reflect in the background (returns at once). */
  readonly endBurst: (sessionKey: string, trigger: BurstTrigger) => Effect.Effect<void>
  /** Reflects now and waits: the entry written (None when the burst had no new messages). */
  readonly reflect: (sessionKey: string, trigger: BurstTrigger) => Effect.Effect<Option.Option<DiaryEntry>, ReflectionSkipped | StorageError | PlaybookError>
  /** Explicit feedback on the current burst: every rule injected and skill used since its start. */
  readonly feedback: (chat: TurnChat, outcome: Outcome) => Effect.Effect<FeedbackReport, StorageError | PlaybookError>
  /** Waits until the background queue is empty (tests, and shutdown of a one-shot CLI run). */
  readonly idle: Effect.Effect<void>
}>()("anna/Learning") {}
