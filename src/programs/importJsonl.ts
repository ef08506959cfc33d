/**
 * `anna memory import`: a JSONL transcript into a session. Two streaming passes: the first checks
 * every line (and reports up to 20 bad ones, storing nothing), the second appends in batches of
 * 2,000 (one transaction each) with progress on stderr. A session that already has messages is
 * refused unless `--append`, so a repeated command never duplicates a transcript.
 */
import { Clock, Effect, FileSystem, Schema, Stream } from "effect"
import { InvalidInput } from "../domain/memory/errors.ts"
import type { SessionRef } from "../domain/memory/session.ts"
import { Content, type NewMessage, Role } from "../domain/message.ts"
import { MemoryProvider } from "../services/MemoryProvider.ts"
import { progress } from "./output.ts"

const ImportLine = Schema.Struct({
  role: Role,
  content: Content,
  ts: Schema.optionalKey(Schema.String)
})
const decodeLine = Schema.decodeUnknownResult(ImportLine)

const BATCH = 2_000
const MAX_REPORTED = 20

/** A decoded message, or the reason the line is not one. */
export const parseImportLine = (line: string): NewMessage | string => {
  let raw: unknown
  try {
    raw = JSON.parse(line)
  } catch (e) {
    return `not valid JSON (${e instanceof Error ? e.message : String(e)})`
  }
  const decoded = decodeLine(raw)
  if (decoded._tag === "Failure") return decoded.failure.message.split("\n").slice(0, 3).join(" ")
  const { role, content, ts } = decoded.success
  if (ts === undefined) return { role, content }
  const createdAt = Date.parse(ts)
  if (Number.isNaN(createdAt)) return `"ts" is not an ISO-8601 time: ${JSON.stringify(ts)}`
  return { role, content, createdAt }
}

export interface ImportResult {
  readonly sessionKey: string
  readonly imported: number
  readonly firstSeq: number
  readonly lastSeq: number
  readonly millis: number
}

export const importJsonl = Effect.fn("importJsonl")(function*(options: {
  readonly session: SessionRef
  readonly file: string
  readonly append: boolean
}) {
  const fs = yield* FileSystem.FileSystem
  const memory = yield* MemoryProvider
  const started = yield* Clock.currentTimeMillis
  const { session, file } = options
  if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) {
    return yield* new InvalidInput({ reason: `no such file: ${file}` })
  }
  const existing = yield* memory.stats(session.key).pipe(
    Effect.map((s) => s.messages),
    Effect.catchTag("SessionNotFound", () => Effect.succeed(0))
  )
  if (existing > 0 && !options.append) {
    return yield* new InvalidInput({
      reason: `session ${session.key} already has ${existing} messages; pass --append to add these after them`
    })
  }
  const lines = fs.stream(file).pipe(
    Stream.decodeText(),
    Stream.splitLines,
    Stream.mapError((e) => new InvalidInput({ reason: `cannot read ${file}: ${e.message}` }))
  )

  // Pass 1: check everything before storing anything.
  let lineNo = 0
  let total = 0
  const problems: Array<string> = []
  yield* Stream.runForEach(lines, (line) =>
    Effect.sync(() => {
      lineNo++
      if (line.trim() === "") return
      const parsed = parseImportLine(line)
      if (typeof parsed === "string") {
        if (problems.length < MAX_REPORTED) problems.push(`line ${lineNo}: ${parsed}`)
        else if (problems.length === MAX_REPORTED) problems.push("…")
      } else total++
    }))
  if (problems.length > 0) {
    return yield* new InvalidInput({ reason: `${file} has invalid lines; nothing was imported:\n  ${problems.join("\n  ")}` })
  }
  if (total === 0) return yield* new InvalidInput({ reason: `${file} has no messages` })

  // Pass 2: append in batches.
  const bar = progress(`importing ${session.key}`, total)
  let done = 0
  yield* lines.pipe(
    Stream.filter((line) => line.trim() !== ""),
    Stream.mapEffect((line) => {
      const parsed = parseImportLine(line)
      return typeof parsed === "string"
        ? Effect.fail(new InvalidInput({ reason: `${file} changed while it was being imported: ${parsed}` }))
        : Effect.succeed(parsed)
    }),
    Stream.grouped(BATCH),
    Stream.runForEach((batch) =>
      memory.append(session, batch).pipe(
        Effect.andThen(() => {
          done += batch.length
          return bar.update(done)
        })
      )
    )
  )
  yield* bar.finish
  const ended = yield* Clock.currentTimeMillis
  const result: ImportResult = {
    sessionKey: session.key,
    imported: done,
    firstSeq: existing + 1,
    lastSeq: existing + done,
    millis: ended - started
  }
  return result
})
