import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { MemoryStore } from "../src/services/MemoryStore.ts"
import { Compactor } from "../src/services/Compactor.ts"
import { sessionOf } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { makeTranscript } from "./support/transcript.ts"
const dir = mkdtempSync(join(tmpdir(), "anna-prof-"))
const engine = openEngine(join(dir, "p.db"))
const s = sessionOf(0, 1)
const t = makeTranscript({ seed: 1 })
for (let i = 0; i < 100; i++) { const b = t.take(1000); await engine.runPromise(MemoryProvider.use((m) => m.append(s, b))) }
const mode = process.argv[2]
await engine.runPromise(Effect.gen(function*() {
  const memory = yield* MemoryProvider
  const store = yield* MemoryStore
  const c = yield* store.getConversation(s.key)
  if (mode === "assemble") {
    for (let i = 0; i < 5; i++) yield* memory.assemble(s.key, { budget: 100_000 })
    const parts: Record<string, number> = {}
    const tm = (k: string, t0: number) => { parts[k] = (parts[k] ?? 0) + performance.now() - t0 }
    for (let i = 0; i < 50; i++) {
      let t0 = performance.now(); const items = yield* store.items(c.id); tm("items", t0)
      t0 = performance.now(); const ids = items.slice(-1000).map((x) => x.refId); tm("slice", t0)
      t0 = performance.now(); yield* store.messagesByIds(ids); tm("messagesByIds", t0)
      t0 = performance.now(); yield* memory.assemble(s.key, { budget: 100_000 }); tm("assemble", t0)
    }
    for (const k in parts) parts[k] = (parts[k] ?? 0) / 50
    console.log(parts)
  } else {
    const t0 = performance.now()
    const c2 = yield* Compactor
    console.log(yield* c2.compact(s.key, { full: true }), performance.now() - t0)
  }
}))
await engine.dispose()
rmSync(dir, { recursive: true, force: true })
