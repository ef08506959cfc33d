/**
 * Access policies as a pure function (issue 13): everyone admits all; a user list exactly its users;
 * attributes only users with every listed attribute at its value; an empty list, an empty match or a
 * stored policy that cannot be read admit nobody (fail closed). The CLI's text form round-trips.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { type AccessPolicy, describePolicy, EVERYONE, mayUse, NOBODY, parsePolicy, storedPolicy } from "../../../src/domain/access/policy.ts"

const Name = Schema.String.check(Schema.isPattern(/^[a-z0-9_]{1,8}$/))
const Subject = Schema.Struct({ id: Name, attributes: Schema.Record(Name, Name) })
const Users = Schema.Array(Name).check(Schema.isMinLength(1))
const Match = Schema.Record(Name, Name)

describe("access policy", () => {
  it.prop("everyone admits every user", { s: Arbitrary.schema(Subject) }, ({ s }) => {
    assert.isTrue(mayUse(EVERYONE, s))
  })

  it.prop("a user list admits exactly the listed users", { s: Arbitrary.schema(Subject), users: Arbitrary.schema(Users) }, ({ s, users }) => {
    assert.strictEqual(mayUse({ kind: "users", users }, s), users.includes(s.id))
    assert.isTrue(mayUse({ kind: "users", users: [...users, s.id] }, s))
    assert.isFalse(mayUse(NOBODY, s))
  })

  it.prop("attributes admit only a user with every listed attribute at its value; an empty match admits nobody", {
    s: Arbitrary.schema(Subject),
    match: Arbitrary.schema(Match)
  }, ({ s, match }) => {
    const all = Object.entries(match).every(([k, v]) => s.attributes[k] === v)
    assert.strictEqual(mayUse({ kind: "attributes", match }, s), Object.keys(match).length > 0 && all)
    // The user's own attributes always match; one more attribute they lack never does.
    if (Object.keys(s.attributes).length > 0) assert.isTrue(mayUse({ kind: "attributes", match: s.attributes }, s))
    assert.isFalse(mayUse({ kind: "attributes", match: { ...s.attributes, "not-theirs!": "x" } }, s))
    // An inherited name is not an attribute.
    assert.isFalse(mayUse({ kind: "attributes", match: { constructor: "x" } }, { id: s.id, attributes: {} }))
  })

  it.prop("the CLI form round-trips", { users: Arbitrary.schema(Users), match: Arbitrary.schema(Match) }, ({ users, match }) => {
    const policies: Array<AccessPolicy> = [EVERYONE, { kind: "users", users: [...new Set(users)] }]
    if (Object.keys(match).length > 0) policies.push({ kind: "attributes", match })
    for (const p of policies) {
      const back = parsePolicy(describePolicy(p))
      assert.deepStrictEqual(back._tag === "Success" ? back.success : back.failure, p)
    }
  })

  it("refuses malformed text, saying what it takes; reads stored JSON, anything unreadable as nobody", () => {
    for (const bad of ["", "all", "users:", "users: ,", "attr:", "attr:group", "attr:=x", "users:a b"]) {
      const r = parsePolicy(bad)
      assert.strictEqual(r._tag, "Failure", bad)
    }
    assert.include(String(parsePolicy("all").pipe((r) => (r._tag === "Failure" ? r.failure : ""))), "everyone, users:ID,… or attr:KEY=VALUE")
    assert.deepStrictEqual(storedPolicy(JSON.stringify({ kind: "users", users: ["bob"] })), { kind: "users", users: ["bob"] })
    for (const junk of ["", "{", "null", '{"kind":"admins"}', '{"kind":"users"}', '{"kind":"attributes","match":{"a":1}}']) {
      assert.deepStrictEqual(storedPolicy(junk), NOBODY, junk)
    }
  })
})
