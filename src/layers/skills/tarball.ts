/**
 * A tarball (`.tar`, `.tar.gz`, `.tgz`) read into memory with the `tar` package's parser — never
 * extracted onto a disk — so every entry is checked before anything is written: only regular files
 * and folders with relative paths inside the archive are accepted; an absolute path, `..`, a
 * symbolic or hard link, a device file, a FIFO or any other entry type refuses the whole archive.
 *
 * A chat user chooses the archive (issue 23: 1 MB of gzip made the gateway hold gigabytes), so the
 * memory used while unpacking is bounded whatever the archive declares:
 *
 * - the archive is read as a stream of chunks of at most 64 KiB (a file or a download is never held
 *   whole; a chat install's bytes, at most 20 MiB, are sliced, not copied), and at most
 *   `maxBytes + TAR_OVERHEAD_BYTES` of it are read;
 * - gzip is undone here, by a zlib stream whose output is counted: the tar data (files, skipped
 *   entries, headers, padding) may be at most `maxBytes + TAR_OVERHEAD_BYTES`, and decompression
 *   stops as soon as that is passed, or at the end-of-archive marker (the parser would keep what
 *   follows it in one growing buffer). The `tar` parser only ever sees plain tar: brotli and zstd
 *   are off, and tar data that starts as gzip again is refused, so its own gunzip (bounded by a
 *   ratio only) never runs;
 * - an entry's declared size counts against `maxBytes` before a byte of it is kept, and its bytes go
 *   into one buffer of that size: accepted files hold at most `maxBytes` in all;
 * - a pax or long-name header larger than MAX_META_BYTES, a path longer than MAX_PATH_BYTES, more
 *   than MAX_SOURCE_FILES files or MAX_ENTRIES entries of any kind refuse the archive, so the
 *   per-entry bookkeeping is bounded too;
 * - a refusal aborts the parser, destroys the decompressor and closes the input at once.
 *
 * So unpacking holds the accepted files (at most `maxBytes`: 64 MiB for the operator, 20 MiB from a
 * chat), the archive when it was given whole, and about 2 MiB besides (zlib's window and a chunk or
 * two in flight, the parser's partial block, a meta header, the paths seen); spent chunks of gunzip
 * output wait for the garbage collector (measured up to 35 MiB on a 1 GiB bomb).
 * test/layers/skills/tarballMemory.test.ts measures it on hostile archives.
 */
import { Effect, Result } from "effect"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { createGunzip } from "node:zlib"
import { Parser, type ReadEntry } from "tar"
import { SkillSourceError, SkillUnsafe } from "../../domain/skills/errors.ts"
import { entryPath, MAX_SOURCE_BYTES, MAX_SOURCE_FILES, type SourceFile } from "../../domain/skills/skill.ts"

/** What a tar stream holds besides its files' bytes: headers, pax headers, padding, folders, the end blocks. */
export const TAR_OVERHEAD_BYTES = 16 * 1024 * 1024
/** A pax or GNU long-name header larger than this refuses the archive (the parser would skip it and misname the next entry). */
export const MAX_META_BYTES = 64 * 1024
export const MAX_PATH_BYTES = 4096
/** Entries of any kind, folders included. */
export const MAX_ENTRIES = 2 * MAX_SOURCE_FILES
const CHUNK_BYTES = 64 * 1024
const MiB = 1024 * 1024
/** Thrown out of the reading loop, to stop the stages upstream: after a refusal, and at the end of the archive. */
const STOP = Symbol("stop")
const END = Symbol("end")

/** A whole archive, or its bytes as they arrive (a file, a download). */
export type TarballInput = Uint8Array | AsyncIterable<Uint8Array>

type Refusal = SkillUnsafe | SkillSourceError

const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"])

/** A name or link target from the archive, cut short for a message. */
const shown = (text: string): string => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

const refusal = (entry: ReadEntry): string | undefined => {
  switch (entry.type) {
    case "SymbolicLink":
      return `symbolic link (to ${shown(entry.linkpath ?? "?")}); links are refused`
    case "Link":
      return `hard link (to ${shown(entry.linkpath ?? "?")}); links are refused`
    case "CharacterDevice":
    case "BlockDevice":
      return "device file"
    case "FIFO":
      return "FIFO (named pipe)"
    default:
      return FILE_TYPES.has(entry.type) || entry.type === "Directory" ? undefined : `unsupported entry type ${entry.type}`
  }
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? ""

/** The input as Buffers of at most CHUNK_BYTES (views, not copies). */
async function* chunksOf(input: TarballInput): AsyncGenerator<Buffer> {
  const slices = function*(bytes: Uint8Array) {
    for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
      yield Buffer.from(bytes.buffer, bytes.byteOffset + at, Math.min(CHUNK_BYTES, bytes.length - at))
    }
  }
  if (input instanceof Uint8Array) return yield* slices(input)
  for await (const chunk of input) yield* slices(chunk)
}

/**
 * Unpacks `input`; never rejects. Everything runs on the caller's chunks as they come: the parser
 * and the entries' handlers are synchronous, so nothing piles up between the stages.
 */
const unpack = async (input: TarballInput, source: string, maxBytes: number, signal: AbortSignal): Promise<Result.Result<ReadonlyArray<SourceFile>, Refusal>> => {
  const maxTar = maxBytes + TAR_OVERHEAD_BYTES
  // Made here, so that no closure below (kept alive by a refusal's stack trace) holds the input itself.
  const incoming = chunksOf(input)
  const tooLarge = () => new SkillSourceError({ source, reason: `more than ${maxBytes / MiB} MiB unpacked` })
  const files: Array<SourceFile> = []
  const seen = new Set<string>()
  let refused: Refusal | undefined
  let ended = false
  let settle = () => {}
  const finished = new Promise<void>((done) => (settle = done))
  const parser = new Parser({ strict: true, brotli: false, zstd: false, maxMetaEntrySize: MAX_META_BYTES })
  const refuse = (why: Refusal) => {
    if (refused !== undefined || ended) return
    refused = why
    parser.abort(new Error(why.message))
    // The refusal's stack trace keeps this function's closures, and so their variables, alive as
    // long as the error lives: what was accepted is let go now.
    files.length = 0
    seen.clear()
    settle()
  }
  let entries = 0
  let total = 0
  parser.on("entry", (entry: ReadEntry) => {
    // After a refusal the parser is aborted; an entry still queued is let go without reading it.
    if (refused !== undefined) return entry.resume()
    if (++entries > MAX_ENTRIES) return refuse(new SkillSourceError({ source, reason: `more than ${MAX_ENTRIES} entries` }))
    if (Buffer.byteLength(entry.path) > MAX_PATH_BYTES) {
      return refuse(new SkillUnsafe({ entry: shown(entry.path), reason: `the path is longer than ${MAX_PATH_BYTES} bytes` }))
    }
    const bad = refusal(entry)
    if (bad !== undefined) return refuse(new SkillUnsafe({ entry: entry.path, reason: bad }))
    const path = entryPath(entry.path)
    if (Result.isFailure(path)) return refuse(path.failure)
    if (entry.type === "Directory" || path.success === "") return entry.resume()
    if (seen.has(path.success)) return refuse(new SkillUnsafe({ entry: entry.path, reason: "appears twice in the archive" }))
    seen.add(path.success)
    if (seen.size > MAX_SOURCE_FILES) return refuse(new SkillSourceError({ source, reason: `more than ${MAX_SOURCE_FILES} files` }))
    // The declared size is checked before anything is kept; then the bytes go straight into one buffer.
    if (entry.size > maxBytes - total) return refuse(tooLarge())
    if (!Number.isSafeInteger(entry.size) || entry.size < 0) return refuse(new SkillUnsafe({ entry: entry.path, reason: `a size of ${entry.size} bytes` }))
    total += entry.size
    const bytes = Buffer.allocUnsafe(entry.size)
    let filled = 0
    entry.on("data", (c: Buffer) => {
      filled += c.copy(bytes, filled)
    })
    entry.on("end", () => {
      // A short body is the parser's "truncated" error; an uninitialised tail is never handed out.
      if (filled === bytes.length) files.push({ path: path.success, bytes, executable: ((entry.mode ?? 0) & 0o111) !== 0 })
    })
  })
  // The parser skips a meta header past its limit, which would misname the entry after it.
  parser.on("ignoredEntry", () => refuse(new SkillSourceError({ source, reason: `an extended header (pax or long name) larger than ${MAX_META_BYTES / 1024} KiB` })))
  parser.on("error", (e: Error) => refuse(new SkillSourceError({ source, reason: `not a readable tarball: ${message(e)}` })))
  parser.on("end", () => {
    ended = true
    settle()
  })

  /** Hands tar data to the parser: counted, and held back until its first two bytes show it is not gzip again. */
  let tarBytes = 0
  let head: Buffer | undefined = Buffer.alloc(0)
  const feed = (chunk: Buffer) => {
    tarBytes += chunk.length
    if (tarBytes > maxTar) return refuse(new SkillSourceError({ source, reason: `unpacks to more than ${maxTar / MiB} MiB (files, headers and padding)` }))
    if (head !== undefined) {
      head = Buffer.concat([head, chunk])
      if (head.length < 2) return
      if (head[0] === 0x1f && head[1] === 0x8b) return refuse(new SkillSourceError({ source, reason: "compressed twice (a gzip inside the gzip)" }))
      chunk = head
      head = undefined
    }
    parser.write(chunk)
  }
  // The end-of-archive marker ends the reading: the parser would keep whatever follows (in one
  // buffer, concatenated chunk by chunk), and nothing after it can matter.
  let sawEnd = false
  parser.on("eof", () => (sawEnd = true))
  const sink = async (tar: AsyncIterable<Buffer>) => {
    for await (const chunk of tar) {
      feed(chunk)
      if (signal.aborted) refuse(new SkillSourceError({ source, reason: "interrupted" }))
      if (refused !== undefined) throw STOP
      if (sawEnd) throw END
    }
  }

  // The input, counted; its own failure (a broken download) is the refusal, in its words.
  let inBytes = 0
  const counted = async function*() {
    try {
      for (;;) {
        let next: IteratorResult<Buffer>
        try {
          next = await incoming.next()
        } catch (e) {
          // Only the input's own failure: what the stages downstream throw in at `yield` passes through.
          return refuse(new SkillSourceError({ source, reason: message(e) }))
        }
        if (next.done === true) return
        inBytes += next.value.length
        if (inBytes > maxTar) return refuse(new SkillSourceError({ source, reason: `the archive is larger than ${maxTar / MiB} MiB` }))
        yield next.value
      }
    } finally {
      await incoming.return(undefined)
    }
  }
  const chunks = counted()
  try {
    // The first two bytes tell gzip (its magic number) from plain tar.
    let first: Buffer = Buffer.alloc(0)
    while (first.length < 2) {
      const next = await chunks.next()
      if (next.done === true) break
      first = first.length === 0 ? next.value : Buffer.concat([first, next.value])
    }
    const rest = async function*() {
      if (first.length > 0) yield first
      yield* chunks
    }
    if (first[0] === 0x1f && first[1] === 0x8b) {
      await pipeline(Readable.from(rest(), { objectMode: false, highWaterMark: CHUNK_BYTES }), createGunzip({ chunkSize: CHUNK_BYTES }), sink, { signal })
    } else {
      await sink(rest())
    }
  } catch (e) {
    if (e !== STOP && e !== END) refuse(new SkillSourceError({ source, reason: `not a readable tarball: ${message(e)}` }))
  } finally {
    await chunks.return(undefined)
  }
  if (refused === undefined && head !== undefined && head.length > 0) parser.write(head)
  if (refused === undefined) parser.end()
  await finished
  return refused === undefined ? Result.succeed(files) : Result.fail(refused)
}

/**
 * The regular files of a tarball (gzip is detected), or why it is refused; the files' bytes may
 * total at most `maxBytes`.
 */
export const readTarball = Effect.fn("Skills.readTarball")(function*(input: TarballInput, source: string, maxBytes: number = MAX_SOURCE_BYTES) {
  const unpacked = yield* Effect.promise((signal) => unpack(input, source, maxBytes, signal))
  if (Result.isFailure(unpacked)) return yield* unpacked.failure
  return unpacked.success
})

export const isTarball = (source: string): boolean => /\.(tar|tar\.gz|tgz)$/i.test(source.replace(/[?#].*$/, ""))
