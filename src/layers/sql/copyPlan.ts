/**
 * What `anna db copy` copies (issue 26; copy.ts does the copying): the source tables that are data
 * of their own, their columns checked against the target's schema, in the target's foreign-key
 * order, and the target's identity columns to advance afterwards.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { CopyRefused } from "../../domain/database/errors.ts"

/** Source tables that are not data of their own (see the header). */
export const skippedTable = (name: string): boolean =>
  name.startsWith("sqlite_") || name === "effect_sql_migrations" || name === "ctx_search_backlog" ||
  name.startsWith("ctx_messages_search") || name.startsWith("ctx_summaries_search")

/** Tables the target keeps itself (counts computed after the copy, a counter its triggers bump): compared or left, never copied. */
export const DERIVED_TABLES: ReadonlyArray<string> = ["ctx_search_counts", "config_version"]

export const quote = (name: string): string => `"${name.replaceAll("\"", "\"\"")}"`

/** One source table as the copy reads and writes it. */
export interface TablePlan {
  readonly name: string
  readonly columns: ReadonlyArray<string>
  /** Primary-key columns in key order (the batches' order when the table has no rowid). */
  readonly key: ReadonlyArray<string>
  /** Whether SQLite's rowid orders the batches (false: WITHOUT ROWID). */
  readonly hasRowid: boolean
  /** Whether SQLite's implicit rowid is written to the target's `rowid` column. */
  readonly copiesRowid: boolean
  /** Whether the insert must override a GENERATED ALWAYS identity. */
  readonly overriding: boolean
}

export interface CopyPlan {
  /** In foreign-key order. */
  readonly tables: ReadonlyArray<TablePlan>
  /** Identity columns of the target to move past the copied ids. */
  readonly identities: ReadonlyArray<{ readonly table: string; readonly column: string }>
}

interface SqliteTableInfo {
  readonly name: string
  readonly type: string
  readonly wr: number
}

/**
 * What to copy and in what order, from both schemas; refuses (listing them) the source tables and
 * columns the target has no place for.
 */
export const plan = (source: SqlClient.SqlClient, target: SqlClient.SqlClient): Effect.Effect<CopyPlan, CopyRefused | SqlError> =>
  Effect.gen(function*() {
    const listed = yield* source<SqliteTableInfo>`SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main'`
    const tables = listed.filter((t) => t.type === "table" && !skippedTable(t.name) && !DERIVED_TABLES.includes(t.name))
    const pgColumns = yield* target<{ table_name: string; column_name: string; is_identity: string; identity_generation: string | null }>`
      SELECT c.table_name, c.column_name, c.is_identity, c.identity_generation FROM information_schema.columns c
      JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`
    const byTable = new Map<string, Map<string, { identity: boolean; always: boolean }>>()
    for (const c of pgColumns) {
      const columns = byTable.get(c.table_name) ?? new Map<string, { identity: boolean; always: boolean }>()
      columns.set(c.column_name, { identity: c.is_identity === "YES", always: c.identity_generation === "ALWAYS" })
      byTable.set(c.table_name, columns)
    }
    const missing: Array<string> = []
    const plans: Array<TablePlan> = []
    for (const t of tables) {
      const info = yield* source.unsafe<{ name: string; pk: number }>(`SELECT name, pk FROM pragma_table_info(?)`, [t.name])
      const target = byTable.get(t.name)
      if (target === undefined) {
        missing.push(`table ${t.name}`)
        continue
      }
      const columns = info.map((c) => c.name)
      for (const c of columns) if (!target.has(c)) missing.push(`column ${t.name}.${c}`)
      const rowid = target.get("rowid")
      const copiesRowid = t.wr === 0 && !columns.includes("rowid") && rowid?.identity === true
      const key = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name)
      const overriding = [...columns, ...(copiesRowid ? ["rowid"] : [])].some((c) => target.get(c)?.always === true)
      plans.push({ name: t.name, columns, key, hasRowid: t.wr === 0, copiesRowid, overriding })
    }
    if (missing.length > 0) {
      return yield* new CopyRefused({
        reason: `the target's schema has no place for ${missing.join(", ")}; copying would lose that data ` +
          "(run the same version of anna on both databases)"
      })
    }
    const edges = yield* target<{ child: string; parent: string }>`
      SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
      FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
      WHERE c.contype = 'f' AND n.nspname = current_schema()`
    const ordered = foreignKeyOrder(plans, edges)
    const copied = new Set(plans.map((p) => p.name))
    const identities = pgColumns.filter((c) => c.is_identity === "YES" && copied.has(c.table_name))
      .map((c) => ({ table: c.table_name, column: c.column_name }))
    return { tables: ordered, identities }
  })

/** Parents before children (Kahn's algorithm; ties by name); a cycle is a defect of the schema. */
const foreignKeyOrder = (
  tables: ReadonlyArray<TablePlan>,
  edges: ReadonlyArray<{ readonly child: string; readonly parent: string }>
): ReadonlyArray<TablePlan> => {
  const byName = new Map(tables.map((t) => [t.name, t]))
  const parents = new Map(tables.map((t) => [t.name, new Set<string>()]))
  for (const e of edges) if (e.child !== e.parent && byName.has(e.parent)) parents.get(e.child)?.add(e.parent)
  const out: Array<TablePlan> = []
  const done = new Set<string>()
  while (out.length < tables.length) {
    const ready = [...byName.keys()].filter((n) => !done.has(n) && [...(parents.get(n) ?? [])].every((p) => done.has(p))).sort()
    if (ready.length === 0) throw new Error(`foreign keys form a cycle among ${[...byName.keys()].filter((n) => !done.has(n)).join(", ")}`)
    for (const n of ready) {
      done.add(n)
      const t = byName.get(n)
      if (t !== undefined) out.push(t)
    }
  }
  return out
}
