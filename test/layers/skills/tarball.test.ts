/**
 * readTarball's limits (issue 23), on archives written byte by byte (./tarballs.ts): a refusal stops
 * reading (and decompressing) at once and closes the input; the tar data after gunzip is counted,
 * skipped entries included; nothing after the end marker is read; a declared size is charged
 * before its bytes are read; the
 * per-entry bookkeeping is bounded (entries of any kind, path length, pax and long-name headers); a
 * gzip inside the gzip is refused; a download is read as it arrives and cancelled on a refusal. A
 * well-formed archive with long names (pax and GNU) still unpacks. The memory these limits keep is
 * measured in ./tarballMemory.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Server } from "node:http"
import { gzipSync } from "node:zlib"
import { MAX_SOURCE_BYTES } from "../../../src/domain/skills/skill.ts"
import { readSource } from "../../../src/layers/skills/sources.ts"
import { MAX_ENTRIES, MAX_META_BYTES, MAX_PATH_BYTES, readTarball, TAR_OVERHEAD_BYTES } from "../../../src/layers/skills/tarball.ts"
import { gzipPieces, paxHeader, skillMd, tarEnd, tarFile, ustarHeader } from "./tarballs.ts"

const MiB = 1024 * 1024

/** `bytes` handed out in pieces of `size`, counting what was taken and whether the reader closed it. */
const metered = (bytes: Buffer, size = 1024) => {
  const meter = { pulled: 0, closed: false }
  const pieces = async function*() {
    try {
      for (let at = 0; at < bytes.length; at += size) {
        meter.pulled += Math.min(size, bytes.length - at)
        yield bytes.subarray(at, at + size)
      }
    } finally {
      meter.closed = true
    }
  }
  return { meter, input: pieces() }
}

const refusalOf = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E>) => effect.pipe(Effect.flip, Effect.map((e) => e.message))

describe("readTarball stops at its limits", () => {
  it.effect("a refusal stops reading at once and closes the input (which would never end)", () =>
    Effect.gen(function*() {
      const meter = { chunks: 0, closed: false }
      const endless = async function*() {
        try {
          yield Buffer.concat([tarFile("SKILL.md", skillMd("x")), tarFile("../evil", "pwned")])
          for (;;) {
            meter.chunks++
            yield Buffer.alloc(64 * 1024)
          }
        } finally {
          meter.closed = true
        }
      }
      assert.include(yield* refusalOf(readTarball(endless(), "endless.tar")), "../evil: the path leads out of the folder")
      assert.isTrue(meter.closed)
      assert.isAtMost(meter.chunks, 1)
    }))

  // gzip members one after another make one stream: a bomb of any size built in a moment.
  const members = (first: Buffer, member: Buffer, count: number, last: Buffer = Buffer.alloc(0)) => {
    const one = gzipSync(member)
    return Buffer.concat([gzipSync(first), ...Array.from({ length: count }, () => one), gzipSync(last)])
  }

  it.effect("a refusal stops decompression: a 1 GiB bomb refused at its second file is barely read", () =>
    Effect.gen(function*() {
      const bomb = members(tarFile("SKILL.md", skillMd("x")), tarFile("zeros.bin", Buffer.alloc(MiB)), 1024, tarEnd())
      const { meter, input } = metered(bomb)
      const e = yield* Effect.flip(readTarball(input, "bomb.tgz", MiB))
      assert.include(e.message, "more than 1 MiB unpacked")
      assert.isTrue(meter.closed)
      assert.isBelow(meter.pulled, bomb.length * 0.2, `read ${meter.pulled} of ${bomb.length} bytes`)
    }))

  it.effect("the tar data is counted, not only the files: 240 MB of pax headers stop at the cap", () =>
    Effect.gen(function*() {
      const bomb = members(tarFile("SKILL.md", skillMd("x")), paxHeader("comment", "c".repeat(60 * 1024)), 4000, tarEnd())
      const { meter, input } = metered(bomb)
      const e = yield* Effect.flip(readTarball(input, "pax.tgz", MiB))
      assert.include(e.message, `unpacks to more than ${(MiB + TAR_OVERHEAD_BYTES) / MiB} MiB (files, headers and padding)`)
      assert.isTrue(meter.closed)
      assert.isBelow(meter.pulled, bomb.length * 0.4, `read ${meter.pulled} of ${bomb.length} bytes`)
    }))

  it.effect("nothing after the end-of-archive marker is read (1 GiB of zeros there)", () =>
    Effect.gen(function*() {
      const archive = members(Buffer.concat([tarFile("SKILL.md", skillMd("x")), tarEnd()]), Buffer.alloc(MiB), 1024)
      const { meter, input } = metered(archive)
      const files = yield* readTarball(input, "trailing.tgz")
      assert.deepStrictEqual(files.map((f) => f.path), ["SKILL.md"])
      assert.isTrue(meter.closed)
      assert.isBelow(meter.pulled, archive.length * 0.2, `read ${meter.pulled} of ${archive.length} bytes`)
    }))

  it.effect("a declared size is charged before its bytes are read (base-256 and pax sizes too)", () =>
    Effect.gen(function*() {
      const skill = tarFile("SKILL.md", skillMd("x"))
      const huge = Buffer.concat([skill, ustarHeader("big.bin", 16 * 1024 * MiB), Buffer.alloc(1024)])
      assert.include(yield* refusalOf(readTarball(huge, "huge.tar")), `more than ${MAX_SOURCE_BYTES / MiB} MiB unpacked`)
      const pax = Buffer.concat([skill, paxHeader("size", "99999999999999999999"), ustarHeader("big.bin", 0), tarEnd()])
      assert.include(yield* refusalOf(readTarball(pax, "pax.tar")), `more than ${MAX_SOURCE_BYTES / MiB} MiB unpacked`)
      // Within the limit but longer than the archive: the parser's truncation, nothing handed out.
      const short = Buffer.concat([skill, ustarHeader("short.bin", MiB), Buffer.from("ten bytes!"), tarEnd()])
      assert.include(yield* refusalOf(readTarball(short, "short.tar")), "not a readable tarball: TAR_BAD_ARCHIVE: Truncated input")
      // Two files each within the limit, too much together.
      const two = Buffer.concat([tarFile("a.bin", Buffer.alloc(600 * 1024)), tarFile("b.bin", Buffer.alloc(600 * 1024)), tarEnd()])
      assert.include(yield* refusalOf(readTarball(two, "two.tar", MiB)), "more than 1 MiB unpacked")
    }))

  it.effect("entries of any kind are counted: 100,000 folders are refused", () =>
    Effect.gen(function*() {
      const folders = yield* Effect.promise(() =>
        gzipPieces(function*() {
          yield tarFile("SKILL.md", skillMd("x"))
          for (let i = 0; i < 100_000; i++) yield ustarHeader(`d${i}/`, 0, "5")
          yield tarEnd()
        }())
      )
      assert.include(yield* refusalOf(readTarball(folders, "folders.tgz")), `more than ${MAX_ENTRIES} entries`)
    }))

  it.effect("a path past MAX_PATH_BYTES, a pax or long-name header past MAX_META_BYTES, a gzip inside the gzip are refused", () =>
    Effect.gen(function*() {
      const skill = tarFile("SKILL.md", skillMd("x"))
      const longPath = Buffer.concat([skill, paxHeader("path", `${"d/".repeat(2100)}f`), tarFile("f", "x"), tarEnd()])
      assert.include(yield* refusalOf(readTarball(longPath, "long.tar")), `the path is longer than ${MAX_PATH_BYTES} bytes`)
      const bigPax = Buffer.concat([skill, paxHeader("comment", "c".repeat(MAX_META_BYTES)), tarFile("f", "x"), tarEnd()])
      assert.include(yield* refusalOf(readTarball(bigPax, "pax.tar")), `an extended header (pax or long name) larger than ${MAX_META_BYTES / 1024} KiB`)
      const name = Buffer.from(`${"n".repeat(MAX_META_BYTES + 1)}\0`)
      const gnu = Buffer.concat([skill, ustarHeader("././@LongLink", name.length, "L"), name, Buffer.alloc((512 - (name.length % 512)) % 512), tarFile("f", "x"), tarEnd()])
      assert.include(yield* refusalOf(readTarball(gnu, "gnu.tar")), "an extended header (pax or long name) larger than")
      const twice = gzipSync(gzipSync(Buffer.concat([skill, tarEnd()])))
      assert.include(yield* refusalOf(readTarball(twice, "twice.tgz")), "compressed twice")
    }))

  it.effect("a well-formed archive still unpacks: long names by pax and GNU headers, folders, exact bytes, whole or a byte at a time", () =>
    Effect.gen(function*() {
      const deep = `${"deep/".repeat(40)}notes.md`
      const gnuName = Buffer.from(`${"g/".repeat(80)}run.sh\0`)
      const archive = gzipSync(Buffer.concat([
        ustarHeader("pkg/", 0, "5"),
        tarFile("pkg/SKILL.md", skillMd("pkg")),
        paxHeader("path", `pkg/${deep}`),
        tarFile("ignored-short-name", "deep notes"),
        ustarHeader("././@LongLink", gnuName.length, "L"),
        gnuName,
        Buffer.alloc((512 - (gnuName.length % 512)) % 512),
        tarFile("ignored-too", "echo hi\n"),
        tarEnd()
      ]))
      const expected = [["pkg/SKILL.md", skillMd("pkg")], [`pkg/${deep}`, "deep notes"], [`${"g/".repeat(80)}run.sh`, "echo hi\n"]]
      const files = yield* readTarball(archive, "good.tgz")
      assert.deepStrictEqual(files.map((f) => [f.path, Buffer.from(f.bytes).toString()]), expected)
      // The same archive arriving a byte at a time (gzip is still told from its first two bytes).
      const trickled = yield* readTarball(metered(archive, 1).input, "good.tgz")
      assert.deepStrictEqual(trickled.map((f) => [f.path, Buffer.from(f.bytes).toString()]), expected)
    }))
})

/** A local HTTP server for one test: `handle` answers every request. */
const serve = (handle: Parameters<typeof createServer>[1]) =>
  Effect.acquireRelease(
    Effect.promise(() => new Promise<Server>((done) => {
      const s = createServer(handle)
      s.listen(0, "127.0.0.1", () => done(s))
    })),
    (s) => Effect.promise(() => new Promise<void>((done) => {
      s.closeAllConnections()
      s.close(() => done())
    }))
  ).pipe(Effect.map((s) => {
    const address = s.address()
    return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  }))

describe("a downloaded tarball is read as it arrives", () => {
  it.effect("an endless download is refused at the limit and the request cancelled", () =>
    Effect.gen(function*() {
      let closed = () => {}
      const cancelled = new Promise<void>((done) => (closed = done))
      const base = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/x-tar" })
        res.on("close", () => closed())
        let i = 0
        const pump = () => {
          while (!res.destroyed && res.write(tarFile(`f${i++}.bin`, Buffer.alloc(64 * 1024))));
          if (!res.destroyed) res.once("drain", pump)
        }
        res.write(tarFile("SKILL.md", skillMd("x")))
        pump()
      })
      const e = yield* Effect.flip(readSource(`${base}/endless.tar`))
      assert.include(e.message, `more than ${MAX_SOURCE_BYTES / MiB} MiB unpacked`)
      // The server sees the request closed: the client stopped reading and cancelled it.
      yield* Effect.promise(() => cancelled)
    }))

  it.effect("a download cut off midway is a download failure", () =>
    Effect.gen(function*() {
      const archive = yield* Effect.promise(() => gzipPieces([tarFile("SKILL.md", skillMd("x")), tarFile("big.bin", Buffer.alloc(4 * MiB, 7)), tarEnd()]))
      const base = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/gzip", "content-length": String(archive.length) })
        res.write(archive.subarray(0, archive.length >> 1), () => res.destroy())
      })
      const e = yield* Effect.flip(readSource(`${base}/cut.tgz`))
      assert.include(e.message, "download failed")
    }))
})
