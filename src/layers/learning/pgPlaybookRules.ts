/**
 * The playbook's rules on PostgreSQL (issue 28): the PlaybookFiles seam over the playbook_rules table
 * (migrations/pg/0016_playbook_rules.sql), so that several gateways on one database share them. The
 * "path" is the scope: '' for the global playbook, the agent's id for an agent's own rules.
 *
 * A row holds the rule as its YAML entry (src/domain/learning/yaml.ts `entryOf`) and is read back
 * through the same checks as an entry of the file (`ruleOfEntry`): a row that does not decode is a
 * PlaybookInvalid naming the scope and the rule, never dropped — except by `readAll` and `updateAll`
 * (`anna playbook export|import`, the way to fix such a row), which report it and carry on without
 * it (the import then replaces or deletes it). An update is one transaction that
 * first takes the scope's advisory lock (pg_advisory_xact_lock(hashtext('anna.playbook:' || scope)),
 * held until the commit), so two gateways' read-modify-writes of one scope run one after the other
 * and none is lost; it then writes only the difference (rows gone are deleted, new or changed ones
 * upserted in one statement). The size limit of a file applies too, so that an export can always be
 * imported again.
 */
import { Effect, Result, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { PlaybookInvalid, type PlaybookError, PlaybookWriteFailed } from "../../domain/learning/errors.ts"
import type { PlaybookRule } from "../../domain/learning/rule.ts"
import { entryOf, ruleOfEntry, stringifyPlaybook } from "../../domain/learning/yaml.ts"
import { storageError } from "../sql/errors.ts"
import { type Change, MAX_PLAYBOOK_BYTES, type PlaybookFiles } from "./playbookFile.ts"

/** Where a scope's rules are, in words (what `Playbook.paths` gives on PostgreSQL). */
export const tableLabel = (scope: string): string =>
  scope === "" ? "table playbook_rules (global)" : `table playbook_rules (agent ${scope})`

const Row = Schema.Struct({ rule_id: Schema.String, position: Schema.Number, rule: Schema.String })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))

const detail = (e: SqlError | Schema.SchemaError) => storageError("")(e).reason

/** A row left out because it does not decode: its rule id and why. */
export interface BrokenRow {
  readonly id: string
  readonly reason: string
}

/**
 * A scope's rules as read: in order, each with its row as stored (position and JSON, what a write
 * compares against); rows that do not decode (lenient reads only).
 */
interface Read {
  readonly rules: ReadonlyArray<PlaybookRule>
  readonly rows: ReadonlyMap<string, { readonly position: number; readonly json: string }>
  readonly broken: ReadonlyArray<BrokenRow>
}

/** The seam, and the lenient read and update export and import use. */
export interface TableRules extends PlaybookFiles {
  /** The scope's rules that decode, and the rows that do not. */
  readonly readAll: (scope: string) => Effect.Effect<{ readonly rules: ReadonlyArray<PlaybookRule>; readonly broken: ReadonlyArray<BrokenRow> }, PlaybookError>
  /** `update` over the rules that decode; rows that do not are replaced (or deleted) by the change's rules when it writes. */
  readonly updateAll: <A, E>(
    scope: string,
    change: (rules: ReadonlyArray<PlaybookRule>) => Effect.Effect<Change<A>, E>
  ) => Effect.Effect<{ readonly result: A; readonly broken: ReadonlyArray<BrokenRow> }, E | PlaybookError>
}

const canonical = (rule: PlaybookRule): string => JSON.stringify(entryOf(rule))

export const makeTableRules = (sql: SqlClient): TableRules => {
  const readScope = (scope: string, lenient: boolean): Effect.Effect<Read, PlaybookError> =>
    sql`SELECT rule_id, position, CAST(rule AS TEXT) AS rule FROM playbook_rules WHERE scope = ${scope} ORDER BY position, rule_id`.pipe(
      Effect.flatMap(decodeRows),
      Effect.mapError((e) => new PlaybookInvalid({ path: tableLabel(scope), line: 0, reason: `cannot read it: ${detail(e)}` })),
      Effect.flatMap((rows) => {
        const rules: Array<PlaybookRule> = []
        const stored = new Map<string, { readonly position: number; readonly json: string }>()
        const broken: Array<BrokenRow> = []
        for (const row of rows) {
          const rule = decodeRow(row)
          if (Result.isFailure(rule)) {
            if (!lenient) return Effect.fail(new PlaybookInvalid({ path: tableLabel(scope), line: 0, reason: `rule "${row.rule_id}": ${rule.failure}` }))
            broken.push({ id: row.rule_id, reason: rule.failure })
            continue
          }
          rules.push(rule.success)
          stored.set(rule.success.id, { position: row.position, json: canonical(rule.success) })
        }
        return Effect.succeed({ rules, rows: stored, broken } as Read)
      })
    )

  const read = Effect.fn("PlaybookRules.read")(function*(scope: string) {
    return (yield* readScope(scope, false)).rules
  })

  const readAll = Effect.fn("PlaybookRules.readAll")(function*(scope: string) {
    const { rules, broken } = yield* readScope(scope, true)
    return { rules, broken }
  })

  /** Writes `next` over the scope's rules as `current` holds them: only what differs. */
  const write = (scope: string, current: Read, next: ReadonlyArray<PlaybookRule>) =>
    Effect.gen(function*() {
      const failed = (reason: string) => new PlaybookWriteFailed({ path: tableLabel(scope), reason })
      const ids = new Set(next.map((r) => r.id))
      if (ids.size !== next.length) return yield* failed("two rules would have the same id")
      if (Buffer.byteLength(stringifyPlaybook(next)) > MAX_PLAYBOOK_BYTES) {
        return yield* failed(`the playbook would be larger than ${MAX_PLAYBOOK_BYTES} bytes`)
      }
      // A rule's position is its index: a row already at it with the same JSON is left alone.
      const changed = next.flatMap((rule, position) => {
        const json = canonical(rule)
        const row = current.rows.get(rule.id)
        return row?.position === position && row.json === json ? [] : [{ position, rule: JSON.parse(json) as unknown }]
      })
      const gone = [...current.rules.map((r) => r.id), ...current.broken.map((b) => b.id)].filter((id) => !ids.has(id))
      const statements = Effect.gen(function*() {
        if (gone.length > 0) yield* sql`DELETE FROM playbook_rules WHERE scope = ${scope} AND rule_id IN ${sql.in(gone)}`
        if (changed.length > 0) {
          yield* sql`INSERT INTO playbook_rules (scope, rule_id, position, rule)
            SELECT ${scope}, e->'rule'->>'id', CAST(e->>'position' AS INTEGER), e->'rule'
            FROM jsonb_array_elements(CAST(${JSON.stringify(changed)} AS jsonb)) AS t(e)
            ON CONFLICT (scope, rule_id) DO UPDATE SET position = excluded.position, rule = excluded.rule`
        }
      })
      yield* statements.pipe(Effect.mapError((e) => failed(detail(e))))
    })

  const updateWith = (lenient: boolean) => <A, E>(scope: string, change: (rules: ReadonlyArray<PlaybookRule>) => Effect.Effect<Change<A>, E>) =>
    sql.withTransaction(
      Effect.gen(function*() {
        // Held until the commit (or rollback): another gateway's update of this scope waits here.
        yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`anna.playbook:${scope}`}))`.pipe(
          Effect.mapError((e) => new PlaybookWriteFailed({ path: tableLabel(scope), reason: detail(e) }))
        )
        const current = yield* readScope(scope, lenient)
        const next = yield* change(current.rules)
        // A broken row is replaced (or deleted) even when the rules that decode are the same.
        const rules = next.rules ?? (current.broken.length > 0 ? current.rules : undefined)
        if (rules !== undefined) yield* write(scope, current, rules)
        return { result: next.result, broken: current.broken }
      })
    ).pipe(
      // BEGIN or COMMIT failed (the rest is mapped where it happens): nothing was written.
      Effect.mapError((e) => (isSqlError(e) ? new PlaybookWriteFailed({ path: tableLabel(scope), reason: detail(e) }) : e)),
      Effect.withSpan("PlaybookRules.update")
    )

  const update = <A, E>(scope: string, change: (rules: ReadonlyArray<PlaybookRule>) => Effect.Effect<Change<A>, E>) =>
    Effect.map(updateWith(false)(scope, change), (done) => done.result)

  return { read, update, readAll, updateAll: updateWith(true) }
}

/** A row's rule, checked as an entry of the file, or why it is not one. */
const decodeRow = (row: typeof Row.Type): Result.Result<PlaybookRule, string> => {
  let raw: unknown
  try {
    raw = JSON.parse(row.rule)
  } catch (e) {
    return Result.fail(`not JSON: ${e instanceof Error ? e.message : String(e)}`)
  }
  const rule = ruleOfEntry(raw)
  if (Result.isFailure(rule)) return rule
  return rule.success.id === row.rule_id ? rule : Result.fail(`the row's rule holds the id "${rule.success.id}"`)
}
