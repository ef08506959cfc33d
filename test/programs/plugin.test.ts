/**
 * `anna plugin` through the real CLI (child processes, real SQLite): the tool plugins listed with
 * the memory plugins; `--agent` switching one agent only, shown as its own setting or inherited;
 * `inherit`; `config --set/--unset` for an agent and globally; the errors an operator can meet, each
 * one line.
 */
import { assert, describe, it } from "@effect/vitest"
import { anna, annaJson, newHome, type Run } from "../support/cli.ts"

interface AgentPlugin {
  readonly id: string
  readonly kind: string
  readonly enabled: boolean
  readonly source: "agent" | "global"
  readonly config: Record<string, unknown>
  readonly agentConfig: Record<string, unknown>
}

const ok = (r: Run) => {
  assert.strictEqual(r.code, 0, r.stdout + r.stderr)
  return r
}

const refused = (r: Run, says: string) => {
  assert.strictEqual(r.code, 1, r.stdout + r.stderr)
  assert.include(r.stderr, says)
  assert.strictEqual(r.stderr.trim().split("\n").filter((l) => l.startsWith("anna:")).length, 1, r.stderr)
}

const state = (plugins: ReadonlyArray<AgentPlugin>, id: string) => {
  const p = plugins.find((x) => x.id === id)
  return p === undefined ? "missing" : `${p.enabled ? "on" : "off"}/${p.source}`
}

describe("anna plugin", () => {
  it("lists, switches and configures plugins per agent", { timeout: 120_000 }, async () => {
    const h = newHome()
    ok(await anna(h, "agent", "set", "alice"))
    ok(await anna(h, "agent", "set", "bob"))

    const global = await annaJson<ReadonlyArray<{ id: string; kind: string; enabled: boolean }>>(h, "plugin", "list")
    assert.deepStrictEqual(global.map((p) => `${p.id}:${p.kind}:${p.enabled}`), [
      "learning:learning:true",
      "memory/lcm:memory:true",
      "memory/simple:memory:false",
      "mcp:tool:true",
      "webfetch:tool:true"
    ])

    assert.strictEqual(ok(await anna(h, "plugin", "disable", "webfetch", "--agent", "alice")).stdout.trim(), "disabled webfetch for agent alice")
    let alice = await annaJson<ReadonlyArray<AgentPlugin>>(h, "plugin", "list", "--agent", "alice")
    let bob = await annaJson<ReadonlyArray<AgentPlugin>>(h, "plugin", "list", "--agent", "bob")
    assert.strictEqual(state(alice, "webfetch"), "off/agent")
    assert.strictEqual(state(alice, "mcp"), "on/global")
    assert.strictEqual(state(bob, "webfetch"), "on/global")

    // global off: bob follows, alice keeps her own; enabling for alice wins over the global state
    ok(await anna(h, "plugin", "disable", "webfetch"))
    ok(await anna(h, "plugin", "enable", "webfetch", "--agent", "alice"))
    alice = await annaJson(h, "plugin", "list", "--agent", "alice")
    bob = await annaJson(h, "plugin", "list", "--agent", "bob")
    assert.strictEqual(state(alice, "webfetch"), "on/agent")
    assert.strictEqual(state(bob, "webfetch"), "off/global")
    const text = ok(await anna(h, "plugin", "list", "--agent", "alice")).stdout
    assert.match(text, /webfetch\s+tool\s+enabled \(agent's own\)/)
    assert.match(text, /mcp\s+tool\s+enabled \(inherited\)/)

    assert.strictEqual(ok(await anna(h, "plugin", "inherit", "webfetch", "--agent", "alice")).stdout.trim(), "disabled webfetch for agent alice")
    assert.strictEqual(state(await annaJson(h, "plugin", "list", "--agent", "alice"), "webfetch"), "off/global")

    // configuration: values as JSON when they parse, else text; the agent's keys over the global ones
    ok(await anna(h, "plugin", "config", "webfetch", "--set", "allow_hosts=intranet.example"))
    const set = await annaJson<Record<string, unknown>>(h, "plugin", "config", "webfetch", "--agent", "alice", "--set", "allow_private=true", "--set", "allow_hosts=[\"a.test\"]")
    assert.deepStrictEqual(set, { allow_private: true, allow_hosts: ["a.test"] })
    assert.deepStrictEqual(await annaJson(h, "plugin", "config", "webfetch", "--agent", "bob"), { config: { allow_hosts: "intranet.example" }, agentConfig: {} })
    ok(await anna(h, "plugin", "config", "webfetch", "--agent", "alice", "--unset", "allow_hosts"))
    assert.deepStrictEqual(await annaJson(h, "plugin", "config", "webfetch", "--agent", "alice"), {
      config: { allow_hosts: "intranet.example", allow_private: true },
      agentConfig: { allow_private: true }
    })
    assert.include(ok(await anna(h, "plugin", "config", "webfetch")).stdout, `webfetch: allow_hosts="intranet.example"`)

    refused(await anna(h, "plugin", "enable", "memory/simple", "--agent", "alice"), "memory plugins are switched for every agent at once")
    refused(await anna(h, "plugin", "disable", "webfetch", "--agent", "carol"), `no agent "carol"`)
    refused(await anna(h, "plugin", "list", "--agent", "carol"), `no agent "carol"`)
    const nope = await anna(h, "plugin", "config", "nope", "--set", "a=1")
    assert.strictEqual(nope.code, 2, "not one of anna's plugins: a usage error")
    assert.include(nope.stderr, `no plugin "nope"`)
    const bad = await anna(h, "plugin", "config", "webfetch", "--set", "novalue")
    assert.strictEqual(bad.code, 2, bad.stderr)
    assert.include(bad.stderr, `--set takes key=value, not "novalue"`)
  })
})
