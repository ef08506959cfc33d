/**
 * The sandbox's output capture (src/layers/docker/exec.ts) without Docker: for any sequence of
 * chunks and any cap, the head is the first bytes written, the tail the last ones (through every
 * wrap of the ring), the gap is counted exactly, and the text is the one the simple
 * concatenate-everything definition gives, cut marks included.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { outputCapture } from "../../../src/layers/sandbox/docker/exec.ts"

const int = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))

/** Pieces of text with characters of 1 to 4 bytes, so cuts land inside characters. */
const ALPHABET = ["a", "\n", "é", "日", "😀", "\u0000"]

/** The capture as defined: everything concatenated, then cut (what the ring must reproduce). */
const reference = (all: Buffer, max: number) => {
  const headMax = Math.ceil(max / 2)
  const tailMax = max - headMax
  const head = all.subarray(0, Math.min(headMax, all.length))
  const rest = all.subarray(head.length)
  const tail = rest.subarray(Math.max(0, rest.length - tailMax))
  return { head, tail, dropped: all.length - head.length - tail.length }
}

/** Splits `bytes` at the given points (taken modulo its length), in order. */
const split = (bytes: Buffer, cuts: ReadonlyArray<number>): Array<Buffer> => {
  const points = [...new Set(cuts.map((c) => (bytes.length === 0 ? 0 : c % (bytes.length + 1))))].sort((x, y) => x - y)
  const chunks: Array<Buffer> = []
  let from = 0
  for (const p of [...points, bytes.length]) {
    chunks.push(bytes.subarray(from, p))
    from = p
  }
  return chunks
}

describe("sandbox output capture", () => {
  it.prop(
    "keeps exactly the first and the last max/2 bytes of random binary chunks",
    {
      chunks: Arbitrary.array(Arbitrary.array(int(0, 255), { maxLength: 80 }), { maxLength: 30 }),
      max: int(0, 100)
    },
    ({ chunks, max }) => {
      const capture = outputCapture(max)
      for (const c of chunks) capture.write(Uint8Array.from(c))
      const all = Buffer.from(chunks.flat())
      const want = reference(all, max)
      assert.deepStrictEqual(capture.head(), want.head)
      assert.deepStrictEqual(capture.tail(), want.tail)
      assert.strictEqual(capture.dropped(), want.dropped)
      assert.strictEqual(capture.total(), all.length)
    },
    { arbitrary: { runs: 1000 } }
  )

  it.prop(
    "cuts text only between characters and marks the gap, as the definition does",
    {
      text: Arbitrary.array(int(0, ALPHABET.length - 1), { maxLength: 300 }),
      cuts: Arbitrary.array(int(0, 2000), { maxLength: 40 }),
      max: int(0, 120)
    },
    ({ text, cuts, max }) => {
      const all = Buffer.from(text.map((i) => ALPHABET[i] ?? "").join(""))
      const capture = outputCapture(max)
      for (const c of split(all, cuts)) capture.write(c)
      const want = reference(all, max)
      const got = capture.text()
      if (want.dropped === 0) {
        assert.strictEqual(got, all.toString("utf8"))
        return
      }
      const marker = `\n[… ${want.dropped.toLocaleString("en-US")} bytes dropped by the sandbox …]\n`
      const at = got.indexOf(marker)
      assert.isAtLeast(at, 0, "the gap is marked")
      const [head, tail] = [got.slice(0, at), got.slice(at + marker.length)]
      assert.notInclude(head + tail, "\ufffd", "no character is split")
      // What is shown is the kept bytes less at most one partial character at each cut.
      assert.isTrue(want.head.toString("latin1").startsWith(Buffer.from(head).toString("latin1")))
      const cutHead = want.head.length - Buffer.byteLength(head)
      assert.isAtMost(cutHead, 3)
      assert.strictEqual(cutHead > 0, want.head.toString("utf8").endsWith("\ufffd"), "only a partial character is cut")
      assert.isTrue(want.tail.toString("latin1").endsWith(Buffer.from(tail).toString("latin1")))
      const cutTail = want.tail.length - Buffer.byteLength(tail)
      assert.isAtMost(cutTail, 3)
      assert.strictEqual(cutTail > 0, want.tail.toString("utf8").startsWith("\ufffd"), "only a partial character is cut")
    },
    { arbitrary: { runs: 1000 } }
  )

  it("holds 200 MB of output in its cap: the tail is the end of the stream", () => {
    const capture = outputCapture(1024)
    const chunk = Buffer.alloc(64 * 1024)
    for (let i = 0; i < 3200; i++) {
      chunk.fill(i % 251)
      capture.write(chunk)
    }
    capture.write(Buffer.from("the end"))
    assert.strictEqual(capture.dropped(), 3200 * 64 * 1024 + 7 - 1024)
    assert.deepStrictEqual(capture.head(), Buffer.alloc(512, 0))
    assert.deepStrictEqual(capture.tail(), Buffer.concat([Buffer.alloc(505, 3199 % 251), Buffer.from("the end")]))
  })
})
