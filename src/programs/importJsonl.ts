/**
 * `anna memory import`: a JSONL transcript into a session, all or nothing. Two streaming passes:
 * the first checks every line — valid UTF-8, at most MAX_LINE_BYTES (refused as soon as a line
 * passes it, so a runaway line is never buffered whole), valid JSON, the message schema, an
 * ISO-8601 `ts`, the stored-size limit — and reports up to 20 bad lines, storing nothing. The
 * second appends in batches of 1,000 with progress on stderr, all inside ONE transaction
 * (MemoryStore.importMessages): a failure or a SIGKILL at any point leaves either no trace of the
 * import or all of it. The second pass checks every line again and stores exactly the messages the
 * first one counted (a file changed in between is refused); only a regular file can be read twice,
 * so a pipe is refused up front. A session that already has messages is refused unless `--append`,
 * so a repeated command never duplicates a transcript. A message without `ts` takes the time of the
 * message before it (the first `ts` of the file, before that one).
 */
import { type Array as Arr, Clock, Effect, FileSystem, Schema, Stream } from "effect"
import { InvalidInput } from "../domain/memory/errors.ts"
import type { SessionRef } from "../domain/memory/session.ts"
import { sizeProblem } from "../domain/memory/storedSize.ts"
import { MAX_MESSAGE_BYTES } from "../domain/memory/types.ts"
import { Content, type NewMessage, Role } from "../domain/message.ts"
import { vectorFromBase64 } from "../domain/search/dense.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { progress } from "./output.ts"

/** A stored vector as `anna memory export` writes it (dense retrieval, issue 25): float32 little-endian, base64. */
const LineEmbedding = Schema.Struct({ model: Schema.String, dims: Schema.Number, vector: Schema.String })

const ImportLine = Schema.Struct({
  role: Role,
  content: Content,
  ts: Schema.optionalKey(Schema.String),
  embeddings: Schema.optionalKey(Schema.Array(LineEmbedding))
})
const decodeLine = Schema.decodeUnknownResult(ImportLine)

/**
 * Messages per batch (one INSERT of the store each): large enough that FTS5's flush per statement
 * is amortized, small enough that a batch dies young. BATCH_BYTES ends a batch of long messages early.
 */
const BATCH = 1_000
const BATCH_BYTES = 4 * 1024 * 1024
const MAX_REPORTED = 20
/**
 * The longest line read: twice the stored-message limit leaves room for JSON escapes and the
 * fields around the content; anything longer cannot be a message that fits.
 */
export const MAX_LINE_BYTES = 2 * MAX_MESSAGE_BYTES

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i

/** Milliseconds of an ISO-8601 time between 1970 and 9999 with real calendar fields, or the reason it is not one. */
export const parseTimestamp = (ts: string): number | string => {
  const m = ISO.exec(ts)
  const bad = `"ts" is not an ISO-8601 time: ${JSON.stringify(ts.length > 40 ? ts.slice(0, 40) + "…" : ts)}`
  if (m === null) return bad
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const dayOk = month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate()
  const timeOk = Number(m[4] ?? 0) <= 23 && Number(m[5] ?? 0) <= 59 && Number(m[6] ?? 0) <= 59
  const at = Date.parse(ts)
  if (!dayOk || !timeOk || Number.isNaN(at)) return bad
  if (year < 1970) return `"ts" is before 1970: ${JSON.stringify(ts)}`
  return at
}

/**
 * A decoded message, or the reason the line is not one. `checkSize: false` leaves the size limit
 * to the store (the second pass, after the first checked it).
 */
export const parseImportLine = (line: string, checkSize = true): NewMessage | string => {
  const entry = parseImportEntry(line, checkSize)
  return typeof entry === "string" ? entry : entry.message
}

/** A line's message and its vectors (an export's `embeddings`), or the reason the line is not one. */
export const parseImportEntry = (
  line: string,
  checkSize = true
): { readonly message: NewMessage; readonly vectors: ReadonlyArray<{ readonly model: string; readonly vector: Float32Array }> } | string => {
  let raw: unknown
  try {
    raw = JSON.parse(line)
  } catch (e) {
    return `not valid JSON (${e instanceof Error ? e.message : String(e)})`
  }
  const decoded = decodeLine(raw)
  if (decoded._tag === "Failure") return decoded.failure.message.split("\n").slice(0, 3).join(" ")
  const { role, content, ts, embeddings } = decoded.success
  const tooBig = checkSize ? sizeProblem(content) : undefined
  if (tooBig !== undefined) return `the message is ${tooBig}`
  const vectors: Array<{ readonly model: string; readonly vector: Float32Array }> = []
  for (const e of embeddings ?? []) {
    const vector = vectorFromBase64(e.vector)
    if (e.model === "" || vector === undefined || vector.length !== e.dims) {
      return `an embedding is not ${e.dims} float32 values in base64 under a model name`
    }
    vectors.push({ model: e.model, vector })
  }
  if (ts === undefined) return { message: { role, content }, vectors }
  const createdAt = parseTimestamp(ts)
  if (typeof createdAt === "string") return createdAt
  return { message: { role, content, createdAt }, vectors }
}

/**
 * Splits a file's bytes into lines, numbered from 1, on LF (a CR before it is dropped), so a line
 * over MAX_LINE_BYTES fails as soon as it passes the limit and is never held whole; each line is
 * decoded as strict UTF-8 (`undefined`: invalid bytes, reported rather than replaced). Lines are
 * handed to `onLine` one at a time as the chunk is scanned, never collected: only the current line
 * is a string at any moment, which keeps the import's memory flat in the size of the file (lines
 * held across chunks survive garbage collections, and survivors are what grows V8's heap).
 */
const lineSplitter = (file: string, onLine: (no: number, text: string | undefined, bytes: number) => void) => {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })
  let parts: Array<Uint8Array> = []
  let pending = 0
  let no = 0
  const tooLong = () =>
    new InvalidInput({
      reason: `${file}: line ${no + 1} is longer than ${MAX_LINE_BYTES / 1048576} MiB (a message may be at most ${
        MAX_MESSAGE_BYTES / 1048576
      } MiB); nothing was imported`
    })
  const finishLine = (tail: Uint8Array) => {
    no++
    let bytes = parts.length === 0 ? tail : Buffer.concat([...parts, tail])
    parts = []
    pending = 0
    if (bytes.length > 0 && bytes[bytes.length - 1] === 13) bytes = bytes.subarray(0, bytes.length - 1)
    let text: string | undefined
    try {
      text = decoder.decode(bytes)
    } catch {
      text = undefined
    }
    onLine(no, text, bytes.length)
  }
  return {
    /** Hands over every line that `chunk` completes; fails when a line passes MAX_LINE_BYTES. */
    feed: (chunk: Uint8Array): InvalidInput | undefined => {
      let from = 0
      for (;;) {
        const nl = chunk.indexOf(10, from)
        const end = nl === -1 ? chunk.length : nl
        if (pending + (end - from) > MAX_LINE_BYTES) return tooLong()
        if (nl === -1) {
          if (end > from) {
            parts.push(chunk.subarray(from, end))
            pending += end - from
          }
          return undefined
        }
        finishLine(chunk.subarray(from, end))
        from = nl + 1
      }
    },
    /** Hands over the last line when the file does not end with a line feed. */
    end: () => {
      if (pending > 0) finishLine(new Uint8Array(0))
    }
  }
}

const CHUNK_BYTES = 1024 * 1024

/** The file's chunks, a read error as InvalidInput. */
const fileChunks = (fs: FileSystem.FileSystem, file: string) =>
  fs.stream(file, { chunkSize: CHUNK_BYTES }).pipe(
    Stream.mapError((e) => new InvalidInput({ reason: `cannot read ${file}: ${e.message}` }))
  )

const failIf = (e: InvalidInput | undefined): Effect.Effect<void, InvalidInput> => (e === undefined ? Effect.void : Effect.fail(e))

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
  const store = yield* MemoryStore
  const started = yield* Clock.currentTimeMillis
  const { session, file } = options
  const info = yield* fs.stat(file).pipe(Effect.option)
  if (info._tag === "None") return yield* new InvalidInput({ reason: `no such file: ${file}` })
  // The file is read twice (checked, then stored), which a pipe or a device cannot do.
  if (info.value.type !== "File") {
    return yield* new InvalidInput({
      reason: `${file} is not a regular file (${info.value.type}); the import reads it twice (to check it, then to store it), so save it to a file first`
    })
  }
  // Early, friendly refusal; importMessages checks again inside its transaction.
  const existing = yield* store.findConversation(session.key).pipe(
    Effect.flatMap((found) => (found._tag === "Some" ? store.stats(found.value.id) : Effect.succeed({ messages: 0 }))),
    Effect.map((s) => s.messages)
  )
  if (existing > 0 && !options.append) {
    return yield* new InvalidInput({
      reason: `session ${session.key} already has ${existing} messages; pass --append to add these after them`
    })
  }

  // Pass 1: check everything before storing anything.
  let total = 0
  // The first `ts` of the file: the time of the undated messages before it.
  let firstAt: number | undefined
  const problems: Array<string> = []
  const report = (no: number, problem: string) => {
    if (problems.length < MAX_REPORTED) problems.push(`line ${no}: ${problem}`)
    else if (problems.length === MAX_REPORTED) problems.push("…")
  }
  const check = lineSplitter(file, (no, text) => {
    if (text === undefined) return report(no, "not valid UTF-8")
    if (text.trim() === "") return
    const parsed = parseImportLine(text)
    if (typeof parsed === "string") return report(no, parsed)
    total++
    firstAt ??= parsed.createdAt
  })
  yield* fileChunks(fs, file).pipe(
    Stream.runForEach((chunk) => Effect.suspend(() => failIf(check.feed(chunk)))),
    Effect.andThen(Effect.sync(check.end)),
    Effect.mapError((e) =>
      problems.length === 0 ? e : new InvalidInput({ reason: `${e.reason}\n  ${problems.join("\n  ")}` })
    )
  )
  if (problems.length > 0) {
    return yield* new InvalidInput({ reason: `${file} has invalid lines; nothing was imported:\n  ${problems.join("\n  ")}` })
  }
  if (total === 0) return yield* new InvalidInput({ reason: `${file} has no messages` })

  // Pass 2: one transaction, appended in batches.
  const bar = progress(`importing ${session.key}`, total)
  const changed = (reason: string) =>
    new InvalidInput({ reason: `${file} changed while it was being imported (${reason}); nothing was imported` })
  let stored = 0
  // A message without `ts` takes the time of the one before it (before the first dated one, that
  // one's), so times stay in order and summary ranges cover the transcript, not the day of the
  // import; a file with no `ts` at all takes the import time.
  let lastAt = firstAt
  const vectors: Array<{ readonly index: number; readonly model: string; readonly vector: Float32Array }> = []
  const messages = Stream.suspend(() => {
    let failure: InvalidInput | undefined
    let batch: Array<NewMessage> = []
    let sizes: Array<number> = []
    let batchBytes = 0
    const ready: Array<ReadonlyArray<NewMessage>> = []
    const cut = (n: number) => {
      ready.push(batch.slice(0, n))
      batch = batch.slice(n)
      sizes = sizes.slice(n)
      batchBytes = sizes.reduce((x, y) => x + y, 0)
    }
    const lines = lineSplitter(file, (no, text, bytes) => {
      if (failure !== undefined || (text !== undefined && text.trim() === "")) return
      const entry = text === undefined ? "not valid UTF-8" : parseImportEntry(text, false)
      if (typeof entry === "string") {
        failure = changed(`line ${no}: ${entry}`)
        return
      }
      const parsed = entry.message
      // The line's vectors, by its place among the messages from 0 (`stored` counts it just below).
      for (const v of entry.vectors) vectors.push({ index: stored, ...v })
      // Exactly the messages that were checked: a file that grew or shrank since is refused.
      if (++stored > total) {
        failure = changed(`it now has more than the ${total} messages checked`)
        return
      }
      lastAt = parsed.createdAt ?? lastAt
      batch.push(parsed.createdAt !== undefined || lastAt === undefined ? parsed : { ...parsed, createdAt: lastAt })
      sizes.push(bytes)
      batchBytes += bytes
      if (batch.length >= BATCH) cut(BATCH)
      // Long messages: a batch ends at BATCH_BYTES too, cut to a power of two so that the store's
      // INSERT statements (cached by their text, i.e. their row count) take only a few shapes.
      else if (batchBytes >= BATCH_BYTES) cut(2 ** Math.floor(Math.log2(batch.length)))
    })
    const take = (): ReadonlyArray<ReadonlyArray<NewMessage>> => ready.splice(0, ready.length)
    return fileChunks(fs, file).pipe(
      Stream.mapEffect((chunk) =>
        Effect.suspend(() => {
          const e = lines.feed(chunk) ?? failure
          return e === undefined ? Effect.succeed(take()) : Effect.fail(e)
        })
      ),
      Stream.mapError((e) => (e === failure ? e : changed(e.reason))),
      Stream.concat(Stream.suspend(() => {
        lines.end()
        while (batch.length > 0) cut(batch.length)
        if (failure !== undefined) return Stream.fail(failure)
        if (stored !== total) return Stream.fail(changed(`it now has ${stored} messages, not the ${total} checked`))
        return Stream.make(take())
      })),
      // Not flattenIterable: its inner stream per element kept every batch alive through the next
      // minor garbage collections (measured: MiBs surviving each one), which grew the young
      // generation to its 128 MiB maximum.
      Stream.filter((bs): bs is Arr.NonEmptyReadonlyArray<ReadonlyArray<NewMessage>> => bs.length > 0),
      Stream.flattenArray
    )
  })
  const r = yield* store.importMessages(session, messages, { append: options.append, onBatch: bar.update })
  // Vectors after the messages' transaction: derived data, which the embedding worker would make
  // again if a crash lost them here. `index` is the message's place in the file from 0: seq firstSeq + index.
  if (vectors.length > 0) {
    const conversation = yield* store.getConversation(session.key)
    yield* store.putMessageVectors(
      conversation.id,
      vectors.map((v) => ({ seq: r.firstSeq + v.index, model: v.model, vector: v.vector }))
    )
  }
  yield* bar.finish
  const ended = yield* Clock.currentTimeMillis
  const result: ImportResult = {
    sessionKey: session.key,
    imported: r.imported,
    firstSeq: r.firstSeq,
    lastSeq: r.lastSeq,
    millis: ended - started
  }
  return result
})
