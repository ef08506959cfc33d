/**
 * The postinstall rewrite of @effect/sql-sqlite-node (scripts/patch-sqlite-node.mjs) is what makes
 * the driver load with stable effect 4. If a reinstall, an upgrade or a change of the script stops
 * it from applying, these tests fail loudly here instead of every SQLite test failing obscurely.
 */
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { tempDbFile } from "../../support/db.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..")
const dist = join(root, "node_modules/@effect/sql-sqlite-node/dist")

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? filesUnder(p) : [p]
  })

describe("@effect/sql-sqlite-node postinstall patch", () => {
  it("the driver is installed", () => {
    assert.isTrue(existsSync(dist), `${dist} is missing: run npm install`)
    const js = filesUnder(dist).filter((f) => f.endsWith(".js"))
    assert.isAtLeast(js.length, 2)
  })

  it("no file of the driver's dist imports effect/unstable/", () => {
    const offenders = filesUnder(dist).filter((f) => readFileSync(f, "utf8").includes("effect/unstable/"))
    assert.deepStrictEqual(
      offenders,
      [],
      "scripts/patch-sqlite-node.mjs did not apply: run `npm run postinstall` (or `node scripts/patch-sqlite-node.mjs`)"
    )
  })

  it("the driver imports the stable effect/sql and effect/reactivity modules", () => {
    const client = readFileSync(join(dist, "SqliteClient.js"), "utf8")
    assert.match(client, /["']effect\/sql\//)
  })

  it("running the patch again is idempotent (rewrites 0 files)", () => {
    const out = execFileSync(process.execPath, [join(root, "scripts/patch-sqlite-node.mjs")], { cwd: root, encoding: "utf8" })
    assert.strictEqual(out.trim(), "patch-sqlite-node: rewrote 0 file(s)")
  })

  it.effect("SqliteClient loads and runs a query on a real file", () =>
    Effect.gen(function*() {
      const file = yield* tempDbFile
      const rows = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE t (x INTEGER)`
        yield* sql`INSERT INTO t ${sql.insert([{ x: 1 }, { x: 41 }])}`
        return yield* sql<{ total: number }>`SELECT sum(x) AS total FROM t`
      }).pipe(Effect.provide(SqliteClient.layer({ filename: file })))
      assert.deepStrictEqual(rows, [{ total: 42 }])
      assert.isTrue(existsSync(file))
    }))
})
