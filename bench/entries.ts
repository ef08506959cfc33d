/**
 * What a custom deployment pays to load anna (issue 25): `anna/layers` (every layer, both model SDKs,
 * Docker, the chat platforms) against `anna/memory` (the memory engine alone), each imported in a
 * fresh Node by scripts/entry-probe.mjs — modules loaded, resident memory after the import, and for
 * `anna/memory` after opening a database with its layers, appending two messages and one search —
 * against a Node that imports nothing. dist/ is rebuilt first unless the caller did. Median of 5 runs.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { removeDb } from "./support/common.ts"
import { int, mib, ms, progress, section, table } from "./support/measure.ts"
import { buildDist, ROOT } from "./startup.ts"

interface Figures {
  readonly modules: number
  readonly packages: ReadonlyArray<string>
  readonly rss: number
  readonly ms: number
}

interface Probe {
  readonly imported: Figures
  readonly searched: (Figures & { readonly hits: number }) | null
}

const RUNS = 5

const probe = (entry: string, database?: string): Probe => {
  if (database !== undefined) removeDb(database)
  const r = spawnSync(process.execPath, [join(ROOT, "scripts/entry-probe.mjs"), join(ROOT, entry), ...(database === undefined ? [] : [database])], {
    cwd: ROOT,
    encoding: "utf8"
  })
  if (r.status !== 0) throw new Error(`entries: ${entry} failed: ${r.stderr}`)
  return JSON.parse(r.stdout) as Probe
}

const median = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

const bareRss = (): number => {
  const r = spawnSync(process.execPath, ["-e", "console.log(process.memoryUsage().rss)"], { encoding: "utf8" })
  return Number(r.stdout.trim())
}

export const runEntries = (dir: string, options: { readonly build?: boolean } = {}): void => {
  if (options.build !== false) buildDist()
  progress("entries: anna/layers vs anna/memory")
  const db = join(dir, "entries.db")
  const layers = Array.from({ length: RUNS }, () => probe("dist/layers.js"))
  const memory = Array.from({ length: RUNS }, () => probe("dist/memory.js", db))
  removeDb(db)
  const bare = median(Array.from({ length: RUNS }, bareRss))
  const row = (label: string, runs: ReadonlyArray<Figures>) => {
    const first = runs[0]
    return [
      label,
      int(first?.modules ?? 0),
      String(first?.packages.length ?? 0),
      mib(median(runs.map((r) => r.rss))),
      ms(median(runs.map((r) => r.ms)))
    ]
  }
  const searched = memory.flatMap((m) => (m.searched === null ? [] : [m.searched]))
  section(
    `Loading anna for a custom deployment (issue 25; fresh Node each, median of ${RUNS})`,
    table(["entry", "modules", "npm packages", "RSS", "time (ms)"], [
      ["node, nothing imported", "0", "0", mib(bare), "–"],
      row("import anna/layers", layers.map((l) => l.imported)),
      row("import anna/memory", memory.map((m) => m.imported)),
      row("anna/memory + open a database, append 2, search", searched)
    ]),
    `anna/layers loads ${layers[0]?.imported.packages.join(", ") ?? "?"}.\n` +
      `anna/memory loads ${memory[0]?.imported.packages.join(", ") ?? "?"} (search hits: ${searched[0]?.hits ?? "?"}). ` +
      "Time: the import, or opening (migrations included) + append + search."
  )
}
