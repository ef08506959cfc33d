/**
 * anna's log lines, as the CLI and the gateway print them: one line per event,
 *
 *   [14:02:07.118] INFO (#16): runtime.exception_path exception_id=EX-009 mcp_server=web agent=default host=mcp.example.com transport=http
 *
 * the message, then the log annotations as `key=value` pairs (logfmt quoting), then what a cause
 * says (its errors' messages). Effect's default logger hands the annotations and the cause to
 * `console.error`, which prints an object of more than a few fields on several lines and a cause
 * with its stack — seven lines for one EX-009 connection, on every `anna chat -p`.
 *
 * Text with line breaks in a message (a `Cause.pretty` put into it) is folded into the line, and
 * its stack frames dropped. With `ANNA_LOG_LEVEL=debug` (or trace, all) the operator asked for
 * details: a message keeps its lines, and a cause's full text (stack included) follows, each line
 * after the first indented so that an event still starts with one `[time] LEVEL` line.
 *
 * Lines are written to LogOutput (stderr, or the screen of `anna chat`), never stdout. Node's
 * process warnings join them here (warnings.ts), and the audit level (AuditLogLevel) is set by the
 * kind of command: `lineLogging` wraps the command line's program.
 */
import { Cause, Effect, Logger, LogLevel, Redacted, References } from "effect"
import { inspect } from "node:util"
import { AuditLogLevel } from "../services/AuditLogLevel.ts"
import { LogOutput } from "../services/LogOutput.ts"
import type { LogFormat } from "./env.ts"
import { attachWarnings } from "./warnings.ts"

const two = (n: number) => n.toString().padStart(2, "0")

/** "14:02:07.118", local time, as Effect's default logger writes it. */
const clock = (d: Date): string => `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${d.getMilliseconds().toString().padStart(3, "0")}`

const STACK_FRAME = /^\s*at\s/

/** Text on one line: stack frames dropped, line breaks and the whitespace around them one space. */
const fold = (text: string): string =>
  text.split(/\r?\n/).filter((l) => !STACK_FRAME.test(l)).map((l) => l.trim()).filter((l) => l !== "").join(" ")

/** Text kept on its lines, those after the first indented (details: debug level). */
const indent = (text: string): string => text.trimEnd().split(/\r?\n/).join("\n  ")

/** Any value as text: one line, or (`details`) a string's own lines. */
const show = (u: unknown, details = false): string => {
  if (typeof u === "string") return details ? indent(u) : fold(u)
  if (Redacted.isRedacted(u)) return "<redacted>"
  if (u instanceof Error) return fold(u.message)
  return fold(inspect(u, { breakLength: Number.POSITIVE_INFINITY, compact: true, depth: 4 }))
}

/** A logfmt value: bare when it has no space, quote, equals sign or control character; else JSON-quoted. */
const value = (u: unknown): string => {
  const text = show(u)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a control character makes a value need quoting
  return text === "" || /[\s"=\u0000-\u001f]/.test(text) ? JSON.stringify(text) : text
}

/** The messages of a cause's errors and defects (its interruptions say nothing worth a line). */
const causeText = (cause: Cause.Cause<unknown>): string =>
  cause.reasons.some((r) => !Cause.isInterruptReason(r))
    ? Cause.prettyErrors(cause).map((e) => fold(e.message)).filter((m) => m !== "").join("; ")
    : ""

export interface LineInput {
  readonly date: Date
  readonly level: LogLevel.LogLevel
  readonly fiberId: number
  readonly message: unknown
  readonly annotations: Readonly<Record<string, unknown>>
  readonly spans: ReadonlyArray<readonly [label: string, startedAt: number]>
  readonly cause: Cause.Cause<unknown>
  /** Add the cause's full text (stack included) on the lines after. */
  readonly details: boolean
}

/** The message's parts as text (its own lines kept only with details), the empty ones left out. */
const messageParts = (input: LineInput): Array<string> =>
  (Array.isArray(input.message) ? input.message : [input.message]).map((u) => show(u, input.details)).filter((p) => p !== "")

/** One log event as text: exactly one line, unless `details` and it has more to say. */
export const formatLine = (input: LineInput): string => {
  const now = input.date.getTime()
  const spans = input.spans.map(([label, start]) => ` ${label.replace(/[\s="]/g, "_")}=${now - start}ms`).join("")
  const parts = messageParts(input)
  const fields = Object.entries(input.annotations).map(([k, v]) => `${k.replace(/[\s="]/g, "_")}=${value(v)}`)
  const because = causeText(input.cause)
  let line = `[${clock(input.date)}] ${input.level.toUpperCase()} (#${input.fiberId})${spans}:`
  if (parts.length > 0) line += ` ${parts.join(" ")}`
  if (fields.length > 0) line += ` ${fields.join(" ")}`
  if (because !== "") line += `${parts.length > 0 || fields.length > 0 ? " —" : ""} ${because}`
  if (!input.details || because === "") return line
  return `${line}\n${Cause.pretty(input.cause).split("\n").map((l) => `  ${l}`).join("\n")}`
}

/** A log annotation as a JSON value: numbers, booleans and null as they are, a secret masked, anything else as text. */
const jsonValue = (u: unknown): unknown =>
  typeof u === "number" ? (Number.isFinite(u) ? u : String(u)) : typeof u === "boolean" || u === null ? u : show(u)

/** The fields of a JSON log line that an annotation of the same name does not replace. */
const JSON_FIELDS = new Set(["time", "level", "fiber", "message", "error", "cause", "trace_id", "span_id", "spans"])

export interface JsonLineInput extends LineInput {
  /** The span the event happened in (its trace and span ids join the line). */
  readonly span?: { readonly traceId: string; readonly spanId: string } | undefined
}

/**
 * One log event as one JSON object on one line (`ANNA_LOG_FORMAT=json`): `time` (ISO 8601, UTC),
 * `level`, `fiber`, `message`, then `trace_id` and `span_id` when it happened inside a span, `spans`
 * (the log spans' milliseconds), the annotations as fields of their own (one named like a fixed field
 * gets an `annotation.` prefix), and `error` (what the cause's errors say; with details, `cause` holds
 * its full text, stack included).
 */
export const formatJsonLine = (input: JsonLineInput): string => {
  const now = input.date.getTime()
  const parts = messageParts(input)
  const line: Record<string, unknown> = {
    time: input.date.toISOString(),
    level: input.level.toUpperCase(),
    fiber: input.fiberId,
    message: parts.join(" ")
  }
  if (input.span !== undefined) {
    line["trace_id"] = input.span.traceId
    line["span_id"] = input.span.spanId
  }
  if (input.spans.length > 0) line["spans"] = Object.fromEntries(input.spans.map(([label, start]) => [label, now - start]))
  for (const [key, v] of Object.entries(input.annotations)) line[JSON_FIELDS.has(key) ? `annotation.${key}` : key] = jsonValue(v)
  const because = causeText(input.cause)
  if (because !== "") line["error"] = because
  if (input.details && because !== "") line["cause"] = Cause.pretty(input.cause)
  return JSON.stringify(line)
}

/** Whether `minimum` lets debug lines through: the operator asked for details. */
const wantsDetails = (minimum: LogLevel.LogLevel): boolean => LogLevel.isLessThanOrEqualTo(minimum, "Debug")

/** A logger writing each event as `format` writes it, to LogOutput. */
const writing = (format: (input: JsonLineInput) => string) =>
  Logger.make<unknown, void>((options) => {
    const fiber = options.fiber
    const span = fiber.cache.span
    fiber.getRef(LogOutput).write(format({
      date: options.date,
      level: options.logLevel,
      fiberId: fiber.id,
      message: options.message,
      annotations: fiber.getRef(References.CurrentLogAnnotations),
      spans: fiber.getRef(References.CurrentLogSpans),
      cause: options.cause,
      details: wantsDetails(fiber.getRef(References.MinimumLogLevel)),
      span: span === undefined ? undefined : { traceId: span.traceId, spanId: span.spanId }
    }))
  })

/** The logger: each event as `formatLine` writes it, to LogOutput. */
export const lineLogger = writing(formatLine)

/** The JSON logger: each event as `formatJsonLine` writes it, to LogOutput. */
export const jsonLogger = writing(formatJsonLine)

/** The loggers of every anna process: ours in place of Effect's default one; spans still get their events. */
export const LOGGERS: ReadonlySet<Logger.Logger<unknown, unknown>> = new Set([lineLogger, Logger.tracerLogger])

/** The loggers for `ANNA_LOG_FORMAT`'s format. */
export const loggersFor = (format: LogFormat): ReadonlySet<Logger.Logger<unknown, unknown>> =>
  format === "json" ? new Set([jsonLogger, Logger.tracerLogger]) : LOGGERS

/**
 * Runs a command line's program with the audit level of its kind (`oneOff`: a CLI command, not the
 * gateway; see AuditLogLevel) and Node's process warnings logged in its context (so at its minimum
 * level, through its loggers).
 */
export const lineLogging = (oneOff: boolean) => <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<never>()
    attachWarnings((w) => Effect.runSyncWith(context)(Effect.logWithLevel(w.level)(w.text)))
    return yield* program
  }).pipe(Effect.provideService(AuditLogLevel, oneOff ? "Debug" : "Info"))
