/**
 * `anna diary reflect <session> [--json]` (issue 15): reflects on the session's latest burst now (the
 * messages after its latest diary entry) with the agent's summary model, or the heuristic when no
 * model answers, and prints the entry written. Nothing to reflect on (no new messages, too few,
 * learning off for the agent) is one clear line and exit 0; an unknown session is exit 1.
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { DiaryEntry } from "../domain/learning/diary.ts"
import { SessionNotFound } from "../domain/memory/errors.ts"
import * as ReflectiveLearning from "../layers/learning/ReflectiveLearning.ts"
import * as SqliteDiary from "../layers/learning/SqliteDiary.ts"
import * as SqliteSkillStats from "../layers/learning/SqliteSkillStats.ts"
import * as YamlPlaybook from "../layers/learning/YamlPlaybook.ts"
import * as SessionLocks from "../layers/memory/SessionLocks.ts"
import { Learning } from "../services/Learning.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { StoresWithMemory } from "./layers.ts"
import { terminalJson, terminalSafe } from "../layers/channels/terminal/render.ts"
import { iso } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const session = Argument.String("session").pipe(Argument.withDescription("The session key (anna memory sessions)"))

const bullets = (title: string, items: ReadonlyArray<string>) =>
  items.length === 0 ? [] : [`${title}:`, ...items.map((i) => `  - ${i}`)]

/** The entry just written, compactly (its identity on two lines, then the lists that have items); `anna diary show` prints every field. */
const entrySummary = (e: DiaryEntry): string =>
  [
    `${e.id}  ${e.status}  quality ${e.qualityScore.toFixed(2)}  (${e.source}, ${e.trigger}, ${iso(e.createdAt)})`,
    `session ${e.sessionKey}  agent ${e.agentId}  user ${e.userId}  messages ${e.fromSeq}–${e.toSeq}`,
    ...(e.tags.length === 0 ? [] : [`tags: ${e.tags.join(", ")}`]),
    ...bullets("accomplishments", e.accomplishments),
    ...bullets("decisions", e.decisions),
    ...bullets("challenges", e.challenges),
    ...bullets("key learnings", e.keyLearnings)
  ].join("\n")

/** The learning loop over the CLI's stores (its background worker goes with the command). */
const LearningLive = ReflectiveLearning.layer.pipe(
  Layer.provide(Layer.mergeAll(SqliteDiary.layer, SqliteSkillStats.layer, YamlPlaybook.layer, SessionLocks.layer)),
  Layer.provideMerge(StoresWithMemory)
)

export const reflectCommand = Command.make("reflect", { session, json }, (f) =>
  Effect.gen(function*() {
    if (Option.isNone(yield* (yield* MemoryStore).findConversation(f.session))) return yield* new SessionNotFound({ sessionKey: f.session })
    const result = yield* (yield* Learning).reflect(f.session, "demand").pipe(
      Effect.map((entry) => ({ entry: Option.getOrUndefined(entry), reason: "no new messages since the last diary entry" })),
      Effect.catchTag("ReflectionSkipped", (e) => Effect.succeed({ entry: undefined, reason: e.reason }))
    )
    // The entry holds model and user text: control sequences are shown as escapes, as `anna diary` does.
    if (f.json) {
      return yield* Console.log(terminalJson(result.entry === undefined ? { reflected: false, reason: result.reason } : { reflected: true, entry: result.entry }, 2))
    }
    yield* Console.log(terminalSafe(result.entry === undefined ? `Nothing reflected for ${f.session}: ${result.reason}.` : entrySummary(result.entry)))
  })).pipe(
    Command.withDescription("Reflect on a session's latest burst now and print the diary entry (the summary model, else the heuristic)"),
    Command.provide(LearningLive)
  )
