/** How `anna db copy` shows a PostgreSQL URL (issue 26): never with its password, wherever it is. */
import { assert, describe, it } from "@effect/vitest"
import { maskUrl, withoutSecret } from "../../src/programs/dbCommands.ts"

describe("anna db copy's URL masking", () => {
  it("masks the password in the user part and in the query, and only that", () => {
    assert.strictEqual(maskUrl("postgres://anna:pw@db.example.com:5432/anna"), "postgres://anna:***@db.example.com:5432/anna")
    assert.strictEqual(maskUrl("postgres://anna@db/anna"), "postgres://anna@db/anna")
    assert.strictEqual(maskUrl("postgresql://db/anna?sslmode=require&password=pw"), "postgresql://db/anna?sslmode=require&password=***")
    assert.strictEqual(maskUrl("not a url with pw"), "postgres://***")
  })

  it("removes the password from any message, raw or percent-encoded", () => {
    const url = "postgres://anna:p%40ss word@db/anna?password=q%26r"
    const text = withoutSecret(`failed: ${url}; auth p@ss word; p%40ss word; q&r rejected`, url)
    for (const secret of ["p@ss word", "p%40ss word", "q&r", "q%26r"]) assert.notInclude(text, secret)
    assert.include(text, "postgres://anna:***@db/anna?password=***")
  })
})
