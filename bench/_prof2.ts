import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { MemoryProvider } from "../src/services/MemoryProvider.ts"
import { sessionOf } from "./support/common.ts"
import { openEngine } from "./support/engine.ts"
import { makeTranscript } from "./support/transcript.ts"
const dir = mkdtempSync(join(tmpdir(), "anna-prof-"))
const file = join(dir, "p.db")
const engine = openEngine(file)
const s = sessionOf(0, 1)
const t = makeTranscript({ seed: 1 })
for (let i = 0; i < 100; i++) { const b = t.take(1000); await engine.runPromise(MemoryProvider.use((m) => m.append(s, b))) }
await engine.dispose()
const db = new DatabaseSync(file)
const q = "SELECT position, message_id, summary_id, tokens, continues_unit, depth FROM ctx_items WHERE conversation_id = ? ORDER BY position"
const st = db.prepare(q)
const time = (label: string, f: () => unknown) => { for (let i = 0; i < 3; i++) f(); const t0 = performance.now(); for (let i = 0; i < 20; i++) f(); console.log(label, ((performance.now() - t0) / 20).toFixed(2), "ms") }
time("objects", () => st.all(1))
st.setReturnArrays(true)
time("arrays", () => st.all(1))
time("iterate arrays", () => { let n = 0; for (const r of st.iterate(1)) n++; return n })
const st2 = db.prepare("SELECT tokens FROM ctx_items WHERE conversation_id = ? ORDER BY position"); st2.setReturnArrays(true)
time("tokens only", () => st2.all(1))
console.log(db.prepare("EXPLAIN QUERY PLAN " + q).all(1))
db.close()
rmSync(dir, { recursive: true, force: true })
