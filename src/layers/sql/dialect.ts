/**
 * What differs between SQLite and PostgreSQL in anna's stores (issue 26), as statement fragments:
 * everything else is written once in SQL both accept (CAST(? AS TEXT) IS NULL for optional filters,
 * CASE for scalar max, CAST(sum(…) AS BIGINT) for 64-bit sums, quoted camel-case names,
 * ON CONFLICT … DO UPDATE with the table's name on the left of an increment).
 */
import type { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"

/** Whether `sql` speaks to PostgreSQL. */
export const isPostgres = (sql: SqlClient): boolean => sql.onDialectOrElse({ pg: () => true, orElse: () => false })

/**
 * The elements of a JSON array bound as one parameter, as rows of one column `value`: ids
 * (`"bigint"`) or texts. One parameter whatever the list's length (SQLite's `json_each`).
 */
export const jsonValues = (sql: SqlClient, json: string, type: "bigint" | "text"): Fragment =>
  isPostgres(sql)
    ? type === "bigint"
      ? sql`SELECT CAST(value AS BIGINT) AS value FROM json_array_elements_text(CAST(${json} AS json)) AS j(value)`
      : sql`SELECT value FROM json_array_elements_text(CAST(${json} AS json)) AS j(value)`
    : sql`SELECT value FROM json_each(${json})`

/**
 * The elements of a JSON array of ids bound as one `?` parameter, as a subquery for `sql.unsafe`
 * statements (`jsonValues` is the same for the template).
 */
export const jsonIdsSql = (sql: SqlClient): string =>
  isPostgres(sql) ? "SELECT CAST(value AS bigint) FROM json_array_elements_text(CAST(? AS json))" : "SELECT value FROM json_each(?)"

/** The UTC hour (`YYYY-MM-DDTHH`) or day (`YYYY-MM-DD`) of a time in ms, as text, for a fixed column expression. */
export const utcBucket = (sql: SqlClient, column: string, bucket: "hour" | "day"): Fragment =>
  sql.literal(
    isPostgres(sql)
      ? `to_char(to_timestamp(${column} / 1000.0) AT TIME ZONE 'UTC', '${bucket === "hour" ? "YYYY-MM-DD\"T\"HH24" : "YYYY-MM-DD"}')`
      : `strftime('${bucket === "hour" ? "%Y-%m-%dT%H" : "%Y-%m-%d"}', ${column} / 1000, 'unixepoch')`
  )

/**
 * A statement written with `?` placeholders for `sql.unsafe`, as the database wants it: PostgreSQL
 * numbers them (`$1`, `$2`, …). A `?` inside a quoted string or identifier is left alone.
 */
export const placeholders = (sql: SqlClient, text: string): string => {
  if (!isPostgres(sql)) return text
  let out = ""
  let n = 0
  let quote: string | undefined
  for (const ch of text) {
    if (quote !== undefined) {
      if (ch === quote) quote = undefined
      out += ch
    } else if (ch === "'" || ch === "\"") {
      quote = ch
      out += ch
    } else out += ch === "?" ? `$${++n}` : ch
  }
  return out
}
