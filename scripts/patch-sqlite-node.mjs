// Temporary shim until @effect/sql-sqlite-node ships a build for effect >= 4.0.0.
// 4.0.0-beta.102 imports "effect/unstable/{sql,reactivity}/*"; effect 4.0.0 moved those
// to "effect/{sql,reactivity}/*". Rewrite the specifiers in place. Idempotent: a second run
// rewrites nothing. test/layers/SqliteDriverPatch.test.ts fails loudly if this stops applying.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const dir = join(process.cwd(), "node_modules/@effect/sql-sqlite-node/dist")
if (!existsSync(dir)) process.exit(0)
let rewritten = 0
for (const f of readdirSync(dir)) {
  if (!/\.(js|d\.ts)$/.test(f)) continue
  const p = join(dir, f)
  const src = readFileSync(p, "utf8")
  const out = src.replace(/(["'])effect\/unstable\//g, "$1effect/")
  if (out !== src) {
    writeFileSync(p, out)
    rewritten++
  }
  if (out.includes("effect/unstable/")) throw new Error(`patch-sqlite-node: ${f} still imports effect/unstable`)
}
console.log(`patch-sqlite-node: rewrote ${rewritten} file(s)`)
