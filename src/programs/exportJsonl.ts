/**
 * `anna memory export`: a session as JSONL, one stored message per line in the format `anna memory
 * import` reads — `{"role", "content", "ts"}`, the content exactly as stored (text, images, tool
 * calls and their results, errors flagged), `ts` its time as ISO-8601 with milliseconds and, when the
 * message has dense retrieval vectors, `embeddings` ([{model, dims, vector: base64 float32 LE}]) — so an
 * export imported into a new session gives back the same messages at the same times.
 *
 * Streamed: the store is read a page at a time by seq (pages shrink when messages are large) and each
 * page is written before the next is read, so memory stays flat however long the session. To stdout,
 * or to `--output FILE` through a private temporary file beside it that is synced and then moved into
 * place: a crash leaves no half-written FILE, and an existing FILE is never replaced unless `--force`
 * (without it the final step is a hard link, which refuses atomically when FILE appeared meanwhile).
 */
import { Clock, Effect, FileSystem, Option, Path, PlatformError, Schema, Stdio, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { InvalidInput, SessionNotFound } from "../domain/memory/errors.ts"
import { vectorBase64 } from "../domain/search/dense.ts"
import { type MessageVector, MemoryStore, type StoredMessage } from "../services/MemoryStore.ts"
import { progress } from "./output.ts"

/** Messages per page read from the store, at most (a page of large messages is cut, see PAGE_BYTES). */
export const EXPORT_PAGE = 500
/** A page's estimated size (tokens × 4) above which the next page asks for half as many messages. */
export const PAGE_BYTES = 4 * 1024 * 1024
/** Exports of at least this many messages show progress on stderr (as import does). */
export const PROGRESS_FROM = 1_000

/** The export could not be written (a full disk, a closed pipe); a partial FILE is never left behind. */
export class ExportFailed extends Schema.TaggedError<ExportFailed>()("ExportFailed", {
  target: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `export to ${this.target} failed: ${this.reason}`
  }
}

/** One line of the export: exactly what `anna memory import` reads back. */
export const exportLine = (m: StoredMessage, vectors: ReadonlyArray<MessageVector> = []): string =>
  JSON.stringify({
    role: m.message.role,
    content: m.message.content,
    ts: new Date(m.createdAt).toISOString(),
    // Dense retrieval's vectors of the message (issue 25), one per model; absent without any.
    ...(vectors.length === 0
      ? {}
      : { embeddings: vectors.map((v) => ({ model: v.model, dims: v.vector.length, vector: vectorBase64(v.vector) })) })
  })

export interface ExportResult {
  readonly sessionKey: string
  readonly exported: number
  /** The file written, or null for stdout. */
  readonly output: string | null
  readonly millis: number
}

interface Page {
  readonly text: string
  readonly count: number
}

/**
 * The session's first `total` messages as pages of JSONL text. `total` is counted when the export
 * starts, so messages appended meanwhile wait for the next export; a session that loses messages
 * meanwhile (deleted) fails rather than leaving a short file.
 */
const pages = (store: MemoryStore["Service"], sessionKey: string, conversationId: number, total: number) =>
  Stream.unfold({ fromSeq: 0, left: total, limit: EXPORT_PAGE }, (s) =>
    Effect.gen(function*() {
      if (s.left <= 0) return undefined
      const rows = yield* store.messagesBySeq(conversationId, s.fromSeq, Math.min(s.limit, s.left))
      const last = rows[rows.length - 1]
      if (last === undefined) {
        return yield* new InvalidInput({ reason: `session ${sessionKey} lost ${s.left} of its messages during the export (deleted?)` })
      }
      const bytes = rows.reduce((n, r) => n + r.tokens * 4, 0)
      const limit = bytes > PAGE_BYTES ? Math.max(1, Math.floor(s.limit / 2)) : Math.min(EXPORT_PAGE, s.limit * 2)
      const first = rows[0]?.seq ?? last.seq
      const vectors = yield* store.messageVectors(conversationId, first, last.seq)
      const bySeq = new Map<number, Array<MessageVector>>()
      for (const v of vectors) bySeq.set(v.seq, [...(bySeq.get(v.seq) ?? []), v])
      const page: Page = { text: rows.map((r) => `${exportLine(r, bySeq.get(r.seq))}\n`).join(""), count: rows.length }
      return [page, { fromSeq: last.seq + 1, left: s.left - rows.length, limit }] as const
    }))

const encoder = new TextEncoder()

const isPlatformError = (e: unknown): e is PlatformError.PlatformError => e instanceof PlatformError.PlatformError

/** A failed write or move as ExportFailed; the store's own failures pass through as they are. */
const writeFailed = (target: string) => <E>(e: E | PlatformError.PlatformError): E | ExportFailed =>
  isPlatformError(e) ? new ExportFailed({ target, reason: e.message }) : e

/** Writes the pages to a private temporary file beside `output`, syncs it, then moves it into place. */
const toFile = <E>(stream: Stream.Stream<Page, E>, output: string, force: boolean) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const temp = path.join(path.dirname(output), `.${path.basename(output)}.${process.pid}-${randomBytes(4).toString("hex")}.partial`)
    const write = Effect.scoped(Effect.gen(function*() {
      const file = yield* fs.open(temp, { flag: "wx", mode: 0o600 })
      yield* Stream.runForEach(stream, (p) => file.writeAll(encoder.encode(p.text)))
      yield* file.sync
    }))
    const place = force
      ? fs.rename(temp, output)
      : fs.link(temp, output).pipe(
        Effect.mapError((e) => (e.reason._tag === "AlreadyExists" ? exists(output) : e))
      )
    yield* Effect.andThen(write, place).pipe(
      Effect.mapError(writeFailed(output)),
      // The temporary file goes whatever happened (after the link it is FILE's second name).
      Effect.ensuring(fs.remove(temp, { force: true }).pipe(Effect.ignore))
    )
  }).pipe(Effect.withSpan("exportJsonl.toFile"))

/** FILE is there already: nothing was written. */
const exists = (output: string) => new InvalidInput({ reason: `${output} exists; pass --force to replace it (nothing was written)` })

export const exportJsonl = Effect.fn("exportJsonl")(function*(options: {
  readonly sessionKey: string
  /** A file to write, or undefined for stdout. */
  readonly output: string | undefined
  readonly force: boolean
}) {
  const store = yield* MemoryStore
  const fs = yield* FileSystem.FileSystem
  const started = yield* Clock.currentTimeMillis
  const { sessionKey, output } = options
  const conversation = yield* store.findConversation(sessionKey)
  if (Option.isNone(conversation)) return yield* new SessionNotFound({ sessionKey })
  // Early, friendly refusal; the final link refuses again if the file appears meanwhile.
  if (output !== undefined && !options.force && (yield* fs.exists(output).pipe(Effect.orElseSucceed(() => false)))) {
    return yield* exists(output)
  }
  const total = yield* store.messageCount(conversation.value.id)
  const bar = total >= PROGRESS_FROM ? progress(`exporting ${sessionKey}`, total) : undefined
  let done = 0
  const stream = pages(store, sessionKey, conversation.value.id, total).pipe(
    Stream.tap((p) => {
      done += p.count
      return bar === undefined ? Effect.void : bar.update(done)
    })
  )
  if (output === undefined) {
    const stdio = yield* Stdio.Stdio
    yield* Stream.run(Stream.map(stream, (p) => p.text), stdio.stdout({ endOnDone: false })).pipe(Effect.mapError(writeFailed("stdout")))
  } else yield* toFile(stream, output, options.force)
  if (bar !== undefined) yield* bar.finish
  const result: ExportResult = { sessionKey, exported: done, output: output ?? null, millis: (yield* Clock.currentTimeMillis) - started }
  return result
})
