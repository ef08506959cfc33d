/**
 * The gateway's CPU cost of a sandbox command's output: 200 MB pushed through the output collector
 * (first and last 512 KiB of each stream kept, the rest counted) in 64 KiB and in 4 KiB chunks, as
 * the demultiplexed exec stream writes them. The floor is a writable that only counts the bytes.
 * CPU time (user + system) of this process, best of three runs; no Docker needed.
 */
import { Writable } from "node:stream"
import { DEFAULT_MAX_OUTPUT_BYTES } from "../src/domain/sandbox/types.ts"
import { collector } from "../src/layers/sandbox/docker/exec.ts"
import { ratios } from "./support/common.ts"
import { ms, ratio, section, table } from "./support/measure.ts"

const TOTAL = 200_000_000
const RUNS = 3

/** CPU milliseconds to write TOTAL bytes in `chunkSize` chunks to `writable`, honouring backpressure. */
const push = async (writable: Writable, chunkSize: number): Promise<number> => {
  const chunk = Buffer.alloc(chunkSize, 0x79)
  const n = Math.ceil(TOTAL / chunkSize)
  const before = process.cpuUsage()
  await new Promise<void>((resolve, reject) => {
    let i = 0
    const pump = () => {
      while (i < n) {
        i++
        if (!writable.write(chunk)) return void writable.once("drain", pump)
      }
      writable.end(resolve)
    }
    writable.once("error", reject)
    pump()
  })
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

const best = async (make: () => Writable, chunkSize: number): Promise<number> => {
  let min = Number.POSITIVE_INFINITY
  for (let i = 0; i < RUNS; i++) min = Math.min(min, await push(make(), chunkSize))
  return min
}

const counting = () => {
  // biome-ignore lint/correctness/noUnusedVariables: counting is the floor's whole job (the collector counts too); nobody reads the total
  let bytes = 0
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      bytes += chunk.length
      done()
    }
  })
}

export const runSandboxOutput = async () => {
  const rows: Array<Array<string>> = []
  for (const size of [64 * 1024, 4 * 1024]) {
    const ours = await best(() => collector(DEFAULT_MAX_OUTPUT_BYTES).writable, size)
    const floor = await best(counting, size)
    const label = `${TOTAL / 1_000_000} MB in ${size / 1024} KiB chunks`
    rows.push([label, ms(ours), ms(floor), ratio(ours, floor)])
    ratios.push({ operation: `sandbox output, ${label}`, ours: `${ms(ours)} ms CPU`, floor: `${ms(floor)} ms CPU`, ratio: ratio(ours, floor) })
  }
  section(
    "Sandbox output capture",
    table(["output", "ours CPU (ms)", "floor CPU (ms)", "ours / floor"], rows),
    `The collector keeps the first and the last ${DEFAULT_MAX_OUTPUT_BYTES / 2048} KiB (a ring written in place) and counts the rest;\n` +
      "the floor only counts. Best of three runs, CPU time of this process."
  )
}
