/**
 * `anna user`, `anna channel` and the runtime flags of `anna agent set` as a person runs them: real
 * processes on a fresh ANNA_HOME, text and --json output, one-line errors and exit codes. Where the
 * CLI's effect matters beyond its output (a token that authenticates, usage per user), the test
 * opens the same database through the stores.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import type { Agent } from "../../src/domain/config/agent.ts"
import { emptyUsage } from "../../src/domain/model/types.ts"
import * as SqliteRuntimeConfig from "../../src/layers/config/SqliteConfigStore.ts"
import type { AgentStore } from "../../src/services/AgentStore.ts"
import { type Channel, ConfigStore, type User } from "../../src/services/ConfigStore.ts"
import type { ProviderStore } from "../../src/services/ProviderStore.ts"
import { UsageLog, type UsageTotals } from "../../src/services/UsageLog.ts"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"
import { homeDatabase } from "../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

/** The stores on the CLI's database, in this process. */
const withStores = <A, E>(h: string, self: Effect.Effect<A, E, ConfigStore | AgentStore | ProviderStore | UsageLog>) =>
  Effect.runPromise(self.pipe(
    Effect.provide(SqliteRuntimeConfig.layerWithStores(h).pipe(Layer.provideMerge(homeDatabase(h))))
  ))

/** A refused command: exit 1, one line on stderr that says why, no stack trace. */
const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  const lines = r.stderr.trim().split("\n")
  assert.strictEqual(lines.length, 1, r.stderr)
  assert.match(lines[0] ?? "", /^anna: /)
  assert.include(r.stderr, says)
}

/** A usage error: exit 2, the problem on the first line, then the command's usage. */
const misused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 2, r.stdout + r.stderr)
  assert.match(r.stderr.split("\n")[0] ?? "", /^anna: /)
  assert.include(r.stderr.split("\n")[0], says)
  assert.match(r.stderr.split("\n")[1] ?? "", /^usage: anna /)
}

describe("anna user", () => {
  it("adds, lists, shows and changes users; refuses mistakes with one line", async () => {
    const h = home()
    await annaJson(h, "agent", "set", "a1")
    const alice = await annaJson<User>(h, "user", "add", "alice", "--name", "Alice", "--default-agent", "a1")
    assert.deepStrictEqual([alice.id, alice.name, alice.defaultAgentId, alice.identities], ["alice", "Alice", "a1", []])

    refused(await anna(h, "user", "add", "alice"), "already exists")
    refused(await anna(h, "user", "add", "bob", "--default-agent", "nope"), `no agent "nope"`)
    misused(await anna(h, "user", "add", "bad:id"), "must be 1–64 letters")
    const users = await annaJson<Array<User>>(h, "user", "list")
    assert.deepStrictEqual(users.map((u) => u.id), ["alice"], "a refused add leaves no user behind")

    const text = await anna(h, "user", "list")
    assert.strictEqual(text.code, 0, text.stderr)
    assert.match(text.stdout, /^USER\s+NAME\s+DEFAULT AGENT/)
    assert.match(text.stdout, /alice\s+Alice\s+a1/)

    const changed = await annaJson<User>(h, "user", "set", "alice", "--name", "Alice B", "--no-default-agent")
    assert.deepStrictEqual([changed.name, changed.defaultAgentId], ["Alice B", null])
    assert.strictEqual((await annaJson<User>(h, "user", "set", "alice", "--default-agent", "a1")).defaultAgentId, "a1")
    const shown = await anna(h, "user", "show", "alice")
    assert.match(shown.stdout, /default agent\s+a1/)
    assert.match(shown.stdout, /name\s+Alice B/)

    misused(await anna(h, "user", "set", "alice"), "nothing to change")
    misused(await anna(h, "user", "set", "alice", "--default-agent", "a1", "--no-default-agent"), "contradict")
    refused(await anna(h, "user", "set", "ghost", "--name", "x"), `no user "ghost"`)
    refused(await anna(h, "user", "show", "ghost"), `no user "ghost"`)

    const missing = await anna(h, "user", "add")
    assert.strictEqual(missing.code, 2, "a missing argument is a usage error")
    const help = await anna(h, "user", "set", "--help")
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "--no-default-agent")
  })

  it("links a platform identity to a user and unlinks it; refuses another user's and malformed ones", async () => {
    const h = home()
    await annaJson(h, "user", "add", "alice")
    await annaJson(h, "user", "add", "bob")
    // Bob already wrote from Telegram as a user of his own (made on first contact).
    const stranger = await withStores(h, Effect.flatMap(ConfigStore, (c) => c.upsertUser("telegram", "555", "Bob on Telegram")))
    const linked = await annaJson<User>(h, "user", "link", "alice", "feishu:ou_abc:def")
    assert.deepStrictEqual(linked.identities.map((i) => [i.platform, i.externalId]), [["feishu", "ou_abc:def"]])
    // Messages from it now reach alice.
    assert.strictEqual((await withStores(h, Effect.flatMap(ConfigStore, (c) => c.upsertUser("feishu", "ou_abc:def")))).id, "alice")
    refused(await anna(h, "user", "link", "bob", "telegram:555"), `telegram:555 belongs to user ${stranger.id}; unlink it there first`)
    misused(await anna(h, "user", "link", "bob", "telegram"), "an identity is PLATFORM:ID")
    refused(await anna(h, "user", "link", "nobody", "telegram:1"), "nobody")
    const text = await anna(h, "user", "unlink", stranger.id, "telegram:555")
    assert.strictEqual(text.code, 0, text.stderr)
    assert.include(text.stdout, "its next message makes a new user")
    assert.deepStrictEqual((await annaJson<User>(h, "user", "link", "bob", "telegram:555")).identities.map((i) => i.externalId), ["555"])
    refused(await anna(h, "user", "unlink", "alice", "telegram:555"), "alice has no identity telegram:555")
  })

  it("prints a token once, alone on stdout, that then authenticates its user", async () => {
    const h = home()
    await annaJson(h, "user", "add", "carol")
    const plain = await anna(h, "user", "token", "carol", "--label", "laptop")
    assert.strictEqual(plain.code, 0, plain.stderr)
    assert.match(plain.stdout, /^anna_[A-Za-z0-9_-]{43}\n$/)
    assert.include(plain.stderr, "shown only this once")
    const viaJson = await annaJson<{ user: User; token: string }>(h, "user", "token", "carol")
    assert.strictEqual(viaJson.user.id, "carol")
    assert.notStrictEqual(viaJson.token, plain.stdout.trim())
    refused(await anna(h, "user", "token", "ghost"), `no user "ghost"`)

    const owners = await withStores(h, Effect.gen(function*() {
      const config = yield* ConfigStore
      const a = yield* config.userForToken(plain.stdout.trim())
      const b = yield* config.userForToken(viaJson.token)
      const wrong = yield* Effect.flip(config.userForToken(viaJson.token + "x"))
      return [a.id, b.id, wrong._tag]
    }))
    assert.deepStrictEqual(owners, ["carol", "carol", "Unauthorized"])
  })
})

describe("anna channel", () => {
  it("enables, disables and configures channels; masks secrets; refuses unknown ids and bad values", async () => {
    const h = home()
    const initial = await annaJson<Array<Channel>>(h, "channel", "list")
    assert.deepStrictEqual(initial.map((c) => [c.id, c.enabled]), [
      ["feishu", false],
      ["http", true],
      ["qq", false],
      ["telegram", false],
      ["wechat", false]
    ])
    const http = await annaJson<Channel>(h, "channel", "set", "http", "--config", "port=9000", "--config", "host=0.0.0.0")
    assert.deepStrictEqual(http, { id: "http", enabled: true, config: { host: "0.0.0.0", port: 9000 } })
    misused(await anna(h, "channel", "set", "http", "--config", "port=70000"), "port must be")
    misused(await anna(h, "channel", "set", "http", "--config", "user=x"), "takes host, port")
    misused(await anna(h, "channel", "set", "http", "--config", "portless"), `--config takes KEY=VALUE, got "portless"`)
    // An empty value removes the key (its default applies again).
    const unset = await annaJson<Channel>(h, "channel", "set", "http", "--config", "host=")
    assert.deepStrictEqual(unset.config, { port: 9000 })
    await annaJson<Channel>(h, "channel", "set", "http", "--config", "host=0.0.0.0")
    assert.deepStrictEqual((await annaJson<Channel>(h, "channel", "disable", "http")).enabled, false)

    const SECRET = "123456789:AAHsecretBotTokenForTheTests0"
    assert.strictEqual((await annaJson<Channel>(h, "channel", "enable", "telegram")).enabled, true)
    const telegram = await annaJson<Channel>(h, "channel", "set", "telegram", "--config", `token=${SECRET}`)
    assert.deepStrictEqual(telegram.config, { token: "123…sts0" })
    const listed = await anna(h, "channel", "list")
    assert.notInclude(listed.stdout, SECRET)
    assert.match(listed.stdout, /http\s+disabled\s+host=0\.0\.0\.0 port=9000/)
    assert.match(listed.stdout, /telegram\s+enabled\s+token=123…sts0/)
    const stored = await withStores(h, Effect.gen(function*() {
      return yield* (yield* ConfigStore).listChannels
    }))
    assert.deepStrictEqual(stored.find((c) => c.id === "telegram")?.config, { token: SECRET }, "stored as given")

    misused(await anna(h, "channel", "enable", "telegarm"), `unknown channel "telegarm"`)
    assert.strictEqual((await anna(h, "channel", "set", "http")).code, 2, "--config is required")
  })

  it("binds a group chat (negative ids too) to an agent and unbinds it", async () => {
    const h = home()
    await annaJson(h, "agent", "set", "a1")
    const bound = await annaJson<{ agentId: string }>(h, "channel", "bind", "telegram", "-100123", "a1")
    assert.strictEqual(bound.agentId, "a1")
    refused(await anna(h, "channel", "bind", "telegram", "-100123", "ghost"), `no agent "ghost"`)
    const binding = await withStores(h, Effect.gen(function*() {
      return yield* (yield* ConfigStore).chatBinding("telegram", "-100123")
    }))
    assert.deepStrictEqual(binding._tag === "Some" ? binding.value : null, "a1")
    const unbound = await annaJson<{ was: string | null }>(h, "channel", "unbind", "telegram", "-100123")
    assert.strictEqual(unbound.was, "a1")
    const again = await anna(h, "channel", "unbind", "telegram", "-100123")
    assert.strictEqual(again.code, 0, again.stderr)
    assert.include(again.stdout, "was not bound")
  })
})

describe("anna agent set: context, tools, turns", () => {
  it("sets and shows the runtime settings; refuses bad values and keeps the old ones", async () => {
    const h = home()
    const created = await annaJson<Agent>(h, "agent", "set", "a1")
    assert.deepStrictEqual([created.contextTokens, created.tools, created.maxTurns], [0, null, 25])
    const set = await annaJson<Agent>(h, "agent", "set", "a1", "--context-tokens", "64000", "--tools", "bash, read,bash", "--max-turns", "5")
    assert.deepStrictEqual([set.contextTokens, set.tools, set.maxTurns], [64000, ["bash", "read"], 5])
    const shown = await anna(h, "agent", "show", "a1")
    assert.match(shown.stdout, /context\s+64000 tokens/)
    assert.match(shown.stdout, /tools\s+bash,read/)
    assert.match(shown.stdout, /max turns\s+5/)

    misused(await anna(h, "agent", "set", "a1", "--tools", "bash,rm"), "unknown tool(s) rm")
    misused(await anna(h, "agent", "set", "a1", "--max-turns", "0"), "turn limit")
    misused(await anna(h, "agent", "set", "a1", "--context-tokens", "128"), "context budget")
    assert.strictEqual((await anna(h, "agent", "set", "a1", "--max-turns", "many")).code, 2)
    const unchanged = await annaJson<Array<Agent>>(h, "agent", "list")
    assert.deepStrictEqual(unchanged.map((a) => [a.contextTokens, a.tools, a.maxTurns]), [[64000, ["bash", "read"], 5]])

    assert.deepStrictEqual((await annaJson<Agent>(h, "agent", "set", "a1", "--tools", "none")).tools, [])
    const all = await annaJson<Agent>(h, "agent", "set", "a1", "--tools", "all", "--context-tokens", "0")
    assert.deepStrictEqual([all.tools, all.contextTokens], [null, 0])
    const list = await anna(h, "agent", "list")
    assert.match(list.stdout, /CONTEXT\s+TOOLS\s+TURNS/)
    assert.match(list.stdout, /128000 \(default\)\s+all\s+5/)
  })

  it("provider usage filters by user and agent", async () => {
    const h = home()
    await withStores(h, Effect.gen(function*() {
      const usage = yield* UsageLog
      const call = (agentId: string, userId: string, inputTokens: number) =>
        usage.record({ providerId: "p", model: "m", purpose: "chat", sessionKey: "s", agentId, userId, usage: { ...emptyUsage, inputTokens } })
      yield* call("a1", "u1", 1)
      yield* call("a1", "u2", 10)
      yield* call("a2", "u1", 100)
    }))
    const input = (t: ReadonlyArray<UsageTotals>) => t.reduce((n, x) => n + x.inputTokens, 0)
    assert.strictEqual(input(await annaJson<Array<UsageTotals>>(h, "provider", "usage", "--user", "u1")), 101)
    assert.strictEqual(input(await annaJson<Array<UsageTotals>>(h, "provider", "usage", "--agent", "a1")), 11)
    assert.strictEqual(input(await annaJson<Array<UsageTotals>>(h, "provider", "usage", "--agent", "a2", "--user", "u2")), 0)
  })
})
