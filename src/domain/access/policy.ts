/**
 * Who may use an agent (issue 13, "access policies"): everyone, listed users, or users whose
 * attributes match (every listed attribute must have the given value, e.g. group=family). A pure
 * function decides; the Runtime asks it on every path into a turn (each channel, the HTTP API, and
 * whatever resolves a chat later), so no path skips it.
 *
 * Fail closed: a stored policy that cannot be read, an attribute policy without attributes and a user
 * list without users admit nobody.
 */
import { Result, Schema } from "effect"

export const AccessPolicy = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("everyone") }),
  Schema.Struct({ kind: Schema.Literal("users"), users: Schema.Array(Schema.String) }),
  Schema.Struct({ kind: Schema.Literal("attributes"), match: Schema.Record(Schema.String, Schema.String) })
])
export type AccessPolicy = typeof AccessPolicy.Type

export const EVERYONE: AccessPolicy = { kind: "everyone" }
/** What an unreadable policy becomes. */
export const NOBODY: AccessPolicy = { kind: "users", users: [] }

/** Who asks: the anna user and their attributes. */
export interface Subject {
  readonly id: string
  readonly attributes: Readonly<Record<string, string>>
}

/** Whether `subject` may use an agent under `policy`. */
export const mayUse = (policy: AccessPolicy, subject: Subject): boolean => {
  switch (policy.kind) {
    case "everyone":
      return true
    case "users":
      return policy.users.includes(subject.id)
    case "attributes": {
      const wanted = Object.entries(policy.match)
      return wanted.length > 0 && wanted.every(([k, v]) => Object.hasOwn(subject.attributes, k) && subject.attributes[k] === v)
    }
  }
}

const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(AccessPolicy))

/** The policy as stored (JSON text); anything unreadable admits nobody. */
export const storedPolicy = (json: string): AccessPolicy => {
  const r = decodeJson(json)
  return r._tag === "Success" ? r.success : NOBODY
}

const NAME = /^[A-Za-z0-9_.@-]{1,64}$/

/**
 * `everyone`, `users:ID,ID…` or `attr:KEY=VALUE,KEY=VALUE…` (the CLI's `--access`), or what is wrong
 * with it.
 */
export const parsePolicy = (text: string): Result.Result<AccessPolicy, string> => {
  const t = text.trim()
  if (t === "everyone") return Result.succeed(EVERYONE)
  const users = /^users:(.*)$/s.exec(t)
  if (users !== null) {
    const ids = (users[1] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")
    if (ids.length === 0) return Result.fail("users: needs at least one user id (users:alice,bob)")
    const bad = ids.find((id) => !NAME.test(id))
    return bad === undefined ? Result.succeed({ kind: "users", users: [...new Set(ids)] }) : Result.fail(`"${bad}" is not a user id`)
  }
  const attr = /^attr:(.*)$/s.exec(t)
  if (attr !== null) {
    const match: Record<string, string> = {}
    for (const pair of (attr[1] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
      const eq = pair.indexOf("=")
      const key = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      if (eq <= 0 || !NAME.test(key) || value === "") return Result.fail(`"${pair}" is not KEY=VALUE`)
      match[key] = value
    }
    if (Object.keys(match).length === 0) return Result.fail("attr: needs at least one KEY=VALUE (attr:group=family)")
    return Result.succeed({ kind: "attributes", match })
  }
  return Result.fail(`access must be everyone, users:ID,… or attr:KEY=VALUE,…; got "${t}"`)
}

/** The policy as `--access` takes it (parsePolicy ∘ describePolicy is the identity). */
export const describePolicy = (p: AccessPolicy): string =>
  p.kind === "everyone"
    ? "everyone"
    : p.kind === "users"
    ? `users:${p.users.join(",")}`
    : `attr:${Object.entries(p.match).map(([k, v]) => `${k}=${v}`).join(",")}`
