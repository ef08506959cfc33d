/**
 * `anna diary list|show|reflect` (issue 15): the diary entries reflection wrote after each burst of
 * a session — what was asked and done, decided, struggled with and learned, with a status and a
 * quality score. `list` filters by session, agent, user, tag and status (newest first); `show`
 * prints every field of one entry. Entries hold model and user text, so what reaches the terminal
 * is made safe (control sequences shown as escapes), in `--json` too.
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { DIARY_STATUSES, type DiaryEntry } from "../domain/learning/diary.ts"
import { oneLine } from "../domain/text.ts"
import { terminalJson, terminalSafe } from "../layers/channels/terminal/render.ts"
import * as SqliteDiary from "../layers/learning/SqliteDiary.ts"
import { Diary } from "../services/Diary.ts"
import { Stores } from "./layers.ts"
import { iso, table } from "./output.ts"
import { reflectCommand } from "./reflectCommand.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const opt = (name: string, description: string) => Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)
const printSafeJson = (value: unknown) => Console.log(terminalJson(value, 2))

/** An entry for `--json`: the stored fields, plus its time as ISO-8601 for people and scripts alike. */
const entryJson = (e: DiaryEntry) => ({ ...e, time: iso(e.createdAt) })

/** The diary over the database; `reflect` brings its own stack (memory and models too), so the database is opened once either way. */
const DiaryLive = SqliteDiary.layer.pipe(Layer.provideMerge(Stores))

const list = Command.make("list", {
  session: opt("session", "Only this session's entries (a session key, e.g. default:telegram:42:dm)"),
  agent: opt("agent", "Only this agent's entries"),
  user: opt("user", "Only this user's entries"),
  tag: opt("tag", "Only entries with this tag (case-insensitive)"),
  status: Flag.Literals("status", DIARY_STATUSES).pipe(Flag.withDescription("Only entries with this status"), Flag.optional),
  limit: Flag.Int("limit").pipe(
    Flag.withDescription(`At most this many entries, newest first (default ${SqliteDiary.DEFAULT_LIST_LIMIT})`),
    Flag.filter((n) => n > 0, (n) => `--limit must be positive, got ${n}`),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const entries = yield* (yield* Diary).list({
      sessionKey: Option.getOrUndefined(f.session),
      agentId: Option.getOrUndefined(f.agent),
      userId: Option.getOrUndefined(f.user),
      tag: Option.getOrUndefined(f.tag),
      status: Option.getOrUndefined(f.status),
      limit: Option.getOrUndefined(f.limit)
    })
    if (f.json) return yield* printSafeJson(entries.map(entryJson))
    if (entries.length === 0) return yield* Console.log("No diary entries (they are written when a session's burst of work ends, or with anna diary reflect).")
    yield* Console.log(terminalSafe(table(
      ["ID", "TIME", "AGENT", "USER", "STATUS", "QUALITY", "SOURCE", "TAGS", "ACCOMPLISHMENT"],
      entries.map((e) => [
        e.id,
        iso(e.createdAt),
        e.agentId,
        e.userId || "-",
        e.status,
        e.qualityScore.toFixed(2),
        e.source,
        oneLine(e.tags.join(",") || "-", 40),
        oneLine(e.accomplishments[0] ?? "-", 60)
      ])
    )))
  })).pipe(Command.withDescription("List diary entries, newest first: --session, --agent, --user, --tag, --status, --limit"), Command.provide(DiaryLive))

const bullets = (title: string, items: ReadonlyArray<string>): string =>
  `${title}:\n${items.length === 0 ? "  (none)" : items.map((i) => `  - ${i.replace(/\n/g, "\n    ")}`).join("\n")}`

/** Every field of an entry, lists as bullet lists. */
export const renderEntry = (e: DiaryEntry): string =>
  [
    `Diary entry ${e.id}`,
    table(["", ""], [
      ["session", e.sessionKey],
      ["agent", e.agentId],
      ["user", e.userId || "-"],
      ["burst", `messages ${e.fromSeq}–${e.toSeq}`],
      ["time", iso(e.createdAt)],
      ["status", e.status],
      ["quality", e.qualityScore.toFixed(2)],
      ["source", e.source === "model" ? "model (the summary model)" : "heuristic (no model answered)"],
      ["trigger", e.trigger],
      ["tags", e.tags.join(", ") || "-"]
    ]).split("\n").slice(1).map((l) => `  ${l}`).join("\n"),
    bullets("Accomplishments", e.accomplishments),
    bullets("Decisions", e.decisions),
    bullets("Challenges", e.challenges),
    bullets("Key learnings", e.keyLearnings)
  ].join("\n")

const show = Command.make("show", {
  id: Argument.String("id").pipe(Argument.withDescription("The entry's id (anna diary list)")),
  json
}, (f) =>
  Effect.gen(function*() {
    const entry = yield* (yield* Diary).get(f.id)
    yield* f.json ? printSafeJson(entryJson(entry)) : Console.log(terminalSafe(renderEntry(entry)))
  })).pipe(Command.withDescription("Show every field of one diary entry"), Command.provide(DiaryLive))

export const diaryCommand = Command.make("diary").pipe(
  Command.withDescription("Diary entries written by reflection after each burst of work: list, show, reflect"),
  Command.withSubcommands([list, show, reflectCommand])
)
