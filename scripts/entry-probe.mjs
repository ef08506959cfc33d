// Imports one of anna's package entries in this (fresh) Node process and prints, as one JSON line,
// what that loaded: every file module (by the synchronous resolve hook), the npm packages among
// them, and the process's resident memory. With a database path it then opens the database with the
// memory layers the entry exports, appends two messages and runs one search, and prints the same
// figures after that. Used by test/programs/memoryEntry.test.ts and bench/entries.ts.
//
//   node scripts/entry-probe.mjs dist/memory.js [database file]
import { registerHooks } from "node:module"
import { resolve as resolvePath } from "node:path"
import { pathToFileURL } from "node:url"

const [entry, database] = process.argv.slice(2)
if (entry === undefined) {
  console.error("usage: entry-probe.mjs ENTRY [DATABASE]")
  process.exit(2)
}
const modules = new Set()
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context)
    if (resolved.url.startsWith("file:")) modules.add(resolved.url)
    return resolved
  }
})

const figures = () => {
  const packages = new Set()
  for (const url of modules) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
    if (m !== null) packages.add(m[1])
  }
  return { modules: modules.size, packages: [...packages].sort(), rss: process.memoryUsage().rss }
}

const t0 = performance.now()
const anna = await import(pathToFileURL(resolvePath(entry)).href)
const imported = { ...figures(), ms: performance.now() - t0 }
let searched = null
if (database !== undefined) {
  const { Effect, Layer, ManagedRuntime } = await import("effect")
  const layer = anna.LcmMemory.layerSqlite.pipe(
    Layer.provide(anna.DeterministicSummarizer.layer),
    Layer.provideMerge(anna.Sqlite.layer(database))
  )
  const runtime = ManagedRuntime.make(layer)
  const t1 = performance.now()
  const hits = await runtime.runPromise(Effect.gen(function*() {
    const memory = yield* anna.MemoryProvider
    const session = anna.sessionRefFromKey("probe:cli:u1:main")
    yield* memory.append(session, [
      { role: "user", content: "Where did we park the zeppelin?", createdAt: 1_700_000_000_000 },
      { role: "assistant", content: "In hangar nine.", createdAt: 1_700_000_001_000 }
    ])
    const searcher = yield* anna.Searcher
    return yield* searcher.search("zeppelin hangar", { scope: { _tag: "Session", sessionKey: session.key }, limit: 5 })
  }))
  searched = { ...figures(), ms: performance.now() - t1, hits: hits.length }
  await runtime.dispose()
}
console.log(JSON.stringify({ entry, imported, searched }))
