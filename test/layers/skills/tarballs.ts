/** Tarballs for tests: entry by entry with the `tar` package's Header, or byte by byte for hostile ones (issue 23). */
import { Header } from "tar"
import { once } from "node:events"
import { createGzip, gzipSync } from "node:zlib"

export interface TarEntry {
  readonly path: string
  readonly type?: "File" | "Directory" | "SymbolicLink" | "Link" | "CharacterDevice" | "FIFO"
  readonly text?: string
  readonly linkpath?: string
  readonly mode?: number
}

export const tarball = (entries: ReadonlyArray<TarEntry>, gzip = true): Buffer => {
  const blocks: Array<Buffer> = []
  for (const e of entries) {
    const data = Buffer.from(e.text ?? "")
    const type = e.type ?? "File"
    const header = new Header({
      path: e.path,
      type,
      mode: e.mode ?? (type === "Directory" ? 0o755 : 0o644),
      size: type === "File" ? data.length : 0,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      ...(e.linkpath === undefined ? {} : { linkpath: e.linkpath })
    })
    const block = Buffer.alloc(512)
    header.encode(block)
    blocks.push(block)
    if (type === "File" && data.length > 0) blocks.push(Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]))
  }
  blocks.push(Buffer.alloc(1024))
  const tar = Buffer.concat(blocks)
  return gzip ? gzipSync(tar) : tar
}

export const skillMd = (name: string, description = `The ${name} skill`, body = `Instructions of ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`

// Hostile archives, written byte by byte (not with the `tar` package, which would refuse to write
// some of them) and gzipped as a stream, so a test never holds the unpacked archive.

/** The padding after `size` bytes of an entry's body, up to the next 512-byte block. */
export const padding = (size: number): number => (512 - (size % 512)) % 512

const octal = (block: Buffer, at: number, width: number, value: number) => {
  block.write(`${value.toString(8).padStart(width - 1, "0")}\0`, at, width, "latin1")
}

/**
 * A 512-byte ustar header written by hand: `type` "0" file, "5" folder, "x" pax header; a size past
 * the 11 octal digits (8 GiB) is written in base-256, as GNU tar does. The checksum is the sum of
 * the header's bytes with its own field read as spaces.
 */
export const ustarHeader = (path: string, size: number, type = "0"): Buffer => {
  const block = Buffer.alloc(512)
  block.write(path.slice(0, 100), 0, 100, "utf8")
  octal(block, 100, 8, type === "5" ? 0o755 : 0o644)
  octal(block, 108, 8, 0)
  octal(block, 116, 8, 0)
  if (size < 8 ** 11) octal(block, 124, 12, size)
  else {
    block[124] = 0x80
    let rest = BigInt(size)
    for (let i = 135; i > 124; i--) {
      block[i] = Number(rest & 0xffn)
      rest >>= 8n
    }
  }
  octal(block, 136, 12, 0)
  block.write(type, 156, 1, "latin1")
  block.write("ustar\0" + "00", 257, 8, "latin1")
  block.fill(0x20, 148, 156)
  let sum = 0
  for (const b of block) sum += b
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1")
  return block
}

/** A pax extended header ("x") with one record `key=value`, body padded: it applies to the next entry. */
export const paxHeader = (key: string, value: string): Buffer => {
  const tail = ` ${key}=${value}\n`
  let length = Buffer.byteLength(tail)
  while (Buffer.byteLength(`${length}${tail}`) !== length) length = Buffer.byteLength(`${length}${tail}`)
  const body = Buffer.from(`${length}${tail}`)
  return Buffer.concat([ustarHeader("PaxHeader", body.length, "x"), body, Buffer.alloc(padding(body.length))])
}

/** A regular file's header, body and padding. */
export const tarFile = (path: string, data: Buffer | string): Buffer => {
  const bytes = Buffer.from(data)
  return Buffer.concat([ustarHeader(path, bytes.length), bytes, Buffer.alloc(padding(bytes.length))])
}

/** The end-of-archive marker: two zero blocks. */
export const tarEnd = (): Buffer => Buffer.alloc(1024)

const ZEROS = Buffer.alloc(1024 * 1024)

/** The gzip of `pieces` streamed through zlib: a Buffer as is, a number as that many zero bytes. */
export const gzipPieces = async (pieces: Iterable<Buffer | number>): Promise<Buffer> => {
  const gzip = createGzip({ level: 6 })
  const out: Array<Buffer> = []
  gzip.on("data", (c: Buffer) => out.push(c))
  const ended = new Promise<void>((done, fail) => {
    gzip.on("end", done)
    gzip.on("error", fail)
  })
  // Small pieces are gathered into writes of about 1 MiB (100,000 tiny writes are slow).
  let batch: Array<Buffer> = []
  let batched = 0
  const flush = async () => {
    if (batched === 0) return
    const chunk = Buffer.concat(batch)
    batch = []
    batched = 0
    if (!gzip.write(chunk)) await once(gzip, "drain")
  }
  for (const piece of pieces) {
    if (typeof piece !== "number") {
      batch.push(piece)
      batched += piece.length
      if (batched >= ZEROS.length) await flush()
      continue
    }
    await flush()
    for (let left = piece; left > 0; left -= ZEROS.length) {
      if (!gzip.write(ZEROS.subarray(0, Math.min(left, ZEROS.length)))) await once(gzip, "drain")
    }
  }
  await flush()
  gzip.end()
  await ended
  return Buffer.concat(out)
}

const MiB = 1024 * 1024
const GiB = 1024 * MiB

/**
 * Archives that made the gateway allocate about a thousand times their size (issue 23), each under
 * 1 MB gzipped:
 * - declared: after a valid SKILL.md, a file that declares 16 GiB followed by 512 MiB of real zeros;
 * - bomb: 512 valid files of 1 MiB of zeros each (512 MiB unpacked), i.e. a gzip bomb;
 * - many: 100,000 one-byte files;
 * - longNames: 500 files whose pax headers give them paths of nearly 1 MB each.
 */
export const hostileArchives = {
  declared: () => gzipPieces([tarFile("SKILL.md", skillMd("declared")), ustarHeader("big.bin", 16 * GiB), 512 * MiB, tarEnd()]),
  bomb: () =>
    gzipPieces(function*() {
      yield tarFile("SKILL.md", skillMd("bomb"))
      for (let i = 0; i < 512; i++) {
        yield ustarHeader(`zeros/${i}.bin`, MiB)
        yield MiB
      }
      yield tarEnd()
    }()),
  many: () =>
    gzipPieces(function*() {
      yield tarFile("SKILL.md", skillMd("many"))
      for (let i = 0; i < 100_000; i++) yield tarFile(`f/${i}.txt`, "x")
      yield tarEnd()
    }()),
  longNames: () =>
    gzipPieces(function*() {
      yield tarFile("SKILL.md", skillMd("long"))
      for (let i = 0; i < 500; i++) {
        yield paxHeader("path", `${i}/${"a".repeat(1_000_000 - 64)}`)
        yield tarFile(`short${i}`, "x")
      }
      yield tarEnd()
    }())
} as const

export type HostileArchive = keyof typeof hostileArchives
