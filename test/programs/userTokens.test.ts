/**
 * `anna user token list|revoke` and `anna user remove`: real CLI processes on a fresh ANNA_HOME;
 * a revoked token is checked against the real HTTP channel running on the same database.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import type { TokenInfo } from "../../src/services/ConfigStore.ts"
import { HttpAddress } from "../../src/services/HttpAddress.ts"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"
import { openHomeDb } from "../support/gatewayDb.ts"
import { httpStack } from "../support/runtimeStack.ts"
import { toJsonl, transcript } from "../support/transcript.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  assert.strictEqual(r.stderr.trim().split("\n").length, 1, r.stderr)
  assert.include(r.stderr, says)
}

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  assert.match(r.stderr.split("\n")[0] ?? "", /^anna: /)
  assert.include(r.stderr.split("\n")[0], says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

const issue = async (h: string, user: string, label: string) => {
  const r = await anna(h, "user", "token", user, "--label", label)
  assert.strictEqual(r.code, 0, r.stderr)
  return r.stdout.trim()
}

describe("anna user token list|revoke", () => {
  it("lists tokens by id without the tokens, and a revoked token gets 401 from the HTTP channel at once", async () => {
    const h = home()
    await annaJson(h, "user", "add", "alice")
    await annaJson(h, "user", "add", "bob")
    const laptop = await issue(h, "alice", "laptop")
    const phone = await issue(h, "alice", "phone")
    const bobs = await issue(h, "bob", "")

    const all = await annaJson<Array<TokenInfo>>(h, "user", "token", "list")
    assert.deepStrictEqual(all.map((t) => [t.userId, t.label]), [["alice", "laptop"], ["alice", "phone"], ["bob", ""]])
    for (const t of all) assert.match(t.id, /^[0-9a-f]{12}$/)
    const text = await anna(h, "user", "token", "list", "alice")
    assert.strictEqual(text.code, 0, text.stderr)
    assert.include(text.stdout, "TOKEN ID")
    assert.include(text.stdout, "laptop")
    assert.notInclude(text.stdout, "bob")
    for (const secret of [laptop, phone, bobs]) {
      assert.notInclude(text.stdout + JSON.stringify(all), secret)
      assert.notInclude(text.stdout + JSON.stringify(all), secret.slice(5, 17))
    }
    refused(await anna(h, "user", "token", "list", "carol"), "no user \"carol\"")
    refused(await anna(h, "user", "token", "revoke", "0000zzzz"), "is not a token id")
    refused(await anna(h, "user", "token", "revoke", "abcdef"), "no token \"abcdef\"")

    const status = (base: string, token: string) =>
      Effect.promise(() => fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => {
        await r.body?.cancel()
        return r.status
      }))
    const laptopId = all[0]?.id ?? ""
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const base = (yield* HttpAddress).url
      assert.deepStrictEqual([yield* status(base, laptop), yield* status(base, phone)], [200, 200])
      const revoked = yield* Effect.promise(() => anna(h, "user", "token", "revoke", laptopId))
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      assert.strictEqual(revoked.stdout.trim(), `Revoked token ${laptopId} (laptop) of alice; it is refused from now on.`)
      // The running channel, the next request: refused; the user's other token still works.
      assert.deepStrictEqual([yield* status(base, laptop), yield* status(base, phone)], [401, 200])
    }).pipe(Effect.provide(httpStack(h)))))
    const left = await annaJson<Array<TokenInfo>>(h, "user", "token", "list", "alice")
    assert.deepStrictEqual(left.map((t) => t.label), ["phone"])
    const json = await annaJson<{ revoked: TokenInfo }>(h, "user", "token", "revoke", (left[0]?.id ?? "").slice(0, 8))
    assert.strictEqual(json.revoked.label, "phone")
    // `anna user token <user>` still issues, and `token issue` does the same for any user id.
    assert.match(await issue(h, "alice", "again"), /^anna_/)
    const viaIssue = await anna(h, "user", "token", "issue", "bob")
    assert.match(viaIssue.stdout.trim(), /^anna_/)
  })
})

describe("anna user remove", () => {
  const setUp = async () => {
    const h = home()
    await annaJson(h, "user", "add", "alice")
    await annaJson(h, "user", "add", "bob")
    await issue(h, "alice", "laptop")
    const file = join(h, "t.jsonl")
    writeFileSync(file, toJsonl(transcript(300, 2)))
    await annaJson(h, "memory", "import", "a1:cli:alice:main", file)
    await annaJson(h, "memory", "import", "a1:cli:alice:work", file)
    await annaJson(h, "memory", "import", "a1:cli:bob:main", file)
    const db = openHomeDb(h)
    db.exec(`INSERT INTO user_identities (platform, external_id, user_id) VALUES ('telegram', '42', 'alice');
      INSERT INTO chat_contexts (agent_id, platform, user_id, chat_id, context) VALUES ('a1', 'cli', 'alice', 'dm', 'main');
      INSERT INTO ctx_agent_memory (user_id, agent_id, content, updated_at) VALUES
        ('alice', 'a1', 'likes tea', 0), ('alice', 'a2', 'works nights', 0), ('bob', 'a1', 'likes coffee', 0)`)
    db.close()
    return h
  }
  const rows = (h: string, table: string) => {
    const db = openHomeDb(h, { readOnly: true })
    const r = db.get(`SELECT count(*) AS n FROM ${table} WHERE user_id = 'alice'`)
    db.close()
    return Number(r?.["n"])
  }
  const sessions = async (h: string, ...args: ReadonlyArray<string>) =>
    (await annaJson<Array<{ sessionKey: string }>>(h, "memory", "sessions", ...args)).map((s) => s.sessionKey).sort()

  it("asks to choose what happens to the sessions", async () => {
    const h = await setUp()
    misused(await anna(h, "user", "remove", "alice"), "choose what happens to alice's 2 session(s): --keep-sessions")
    misused(await anna(h, "user", "remove", "alice", "--keep-sessions", "--delete-sessions"), "contradict")
    refused(await anna(h, "user", "remove", "carol", "--keep-sessions"), "no user \"carol\"")
    assert.deepStrictEqual((await annaJson<Array<{ id: string }>>(h, "user", "list")).map((u) => u.id), ["alice", "bob"])
  })

  it("--keep-sessions removes the user, identities, tokens and chat states; operators still read the sessions under the removed id", async () => {
    const h = await setUp()
    const r = await anna(h, "user", "remove", "alice", "--keep-sessions")
    assert.strictEqual(r.code, 0, r.stderr)
    const removedAs = /as (alice~removed-[0-9a-f]{16}),/.exec(r.stdout)?.[1] ?? ""
    assert.deepStrictEqual(r.stdout.trim().split("\n"), [
      "Removed user alice: 1 identity, 1 token, 1 chat state and 0 scheduled jobs.",
      `Kept 2 sessions and 2 profiles as ${removedAs}, an id no user can be given (see: anna memory sessions --user ${removedAs}).`,
      "A new user alice would start with nothing of theirs."
    ])
    assert.deepStrictEqual((await annaJson<Array<{ id: string }>>(h, "user", "list")).map((u) => u.id), ["bob"])
    assert.deepStrictEqual([rows(h, "user_identities"), rows(h, "user_tokens"), rows(h, "chat_contexts")], [0, 0, 0])
    assert.strictEqual(rows(h, "ctx_agent_memory"), 0, "the agents' profiles of alice went with her sessions…")
    assert.deepStrictEqual(await sessions(h, "--user", "alice"), [])
    assert.deepStrictEqual(await sessions(h, "--user", removedAs), [`a1:cli:${removedAs}:main`, `a1:cli:${removedAs}:work`], "…to the removed id")
    assert.strictEqual((await annaJson<{ messages: number }>(h, "memory", "stats", `a1:cli:${removedAs}:main`)).messages, 300)
  })

  it("--delete-sessions also deletes their sessions; the rest verifies", async () => {
    const h = await setUp()
    const r = await annaJson<{
      tokens: number
      deletedSessions: Array<{ sessionKey: string; messages: number }>
      profiles: number
    }>(h, "user", "remove", "alice", "--delete-sessions")
    assert.strictEqual(r.tokens, 1)
    // The agents' notes about alice (drawn from her sessions) go with them; bob's stay.
    assert.strictEqual(r.profiles, 2)
    assert.strictEqual(rows(h, "ctx_agent_memory"), 0)
    const db = openHomeDb(h, { readOnly: true })
    assert.deepStrictEqual({ ...db.get("SELECT user_id, content FROM ctx_agent_memory") }, { user_id: "bob", content: "likes coffee" })
    db.close()
    assert.deepStrictEqual(r.deletedSessions.map((d) => [d.sessionKey, d.messages]).sort(), [["a1:cli:alice:main", 300], ["a1:cli:alice:work", 300]])
    assert.deepStrictEqual(await sessions(h), ["a1:cli:bob:main"])
    assert.deepStrictEqual([rows(h, "user_identities"), rows(h, "user_tokens"), rows(h, "chat_contexts")], [0, 0, 0])
    const verify = await anna(h, "memory", "verify")
    assert.strictEqual(verify.code, 0, verify.stderr)
  })
})
