/**
 * A value that cannot be used as given — out of range, malformed, one of a fixed set it is not, two
 * flags that contradict each other, a choice left out — is a usage error wherever it is checked
 * (issue 24): exit 2, the problem, the command's usage and where to read more, on stderr. A refusal
 * that depends on what is stored (an unknown agent, a user who exists) stays exit 1.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { afterAll, beforeAll } from "vitest"
import { anna, newHome, type Run } from "../support/cli.ts"

const home = newHome()
afterAll(() => rmSync(home, { recursive: true, force: true }))
beforeAll(async () => {
  for (
    const args of [
      ["provider", "add", "p1", "--type", "openai", "--base-url", "http://127.0.0.1:9/v1", "--default-model", "m"],
      ["agent", "set", "a1", "--model", "p1/m"],
      ["user", "add", "u1"]
    ]
  ) {
    const r = await anna(home, ...args)
    assert.strictEqual(r.code, 0, r.stderr)
  }
}, 60_000)

/** Exit 2: the problem on the first line, then the usage of `path`. */
const usageError = (r: Run, path: string, says: string) => {
  assert.strictEqual(r.code, 2, `exit ${r.code}\n${r.stdout}${r.stderr}`)
  const [first, usage] = r.stderr.split("\n")
  assert.match(first ?? "", /^anna: /, r.stderr)
  assert.include(first, says)
  assert.match(usage ?? "", new RegExp(`^usage: anna ${path}\\b`), r.stderr)
  assert.strictEqual(r.stdout, "")
}

describe("bad values are usage errors (exit 2) wherever they are checked", () => {
  const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string, string]> = [
    [["agent", "set", "a1", "--context-tokens", "5"], "agent set", "the context budget must be a whole number of tokens from 1000"],
    [["agent", "set", "a1", "--max-turns", "0"], "agent set", "the turn limit must be a whole number from 1 to 1000"],
    [["agent", "set", "a1", "--memory-mb", "1"], "agent set", "at least 16"],
    [["agent", "set", "a1", "--tools", "bogus"], "agent set", "unknown tool(s) bogus"],
    [["agent", "set", "a1", "--access", "bogus"], "agent set", "access must be everyone"],
    [["agent", "set", "a1", "--summary-model", "p1/m", "--no-summary-model"], "agent set", "contradict each other"],
    [["agent", "set", "a1", "--system-prompt", "@"], "agent set", "needs a file name after the @"],
    [["agent", "set", "bad id!", "--model", "p1/m"], "agent set", `agent id "bad id!" must be 1–64 letters`],
    [["provider", "add", "p2", "--type", "openai", "--base-url", "notaurl", "--default-model", "m"], "provider add", "base URL is not a URL"],
    [["provider", "set", "p1", "--first-byte-timeout", "soon"], "provider set", "--first-byte-timeout takes seconds"],
    [["provider", "set", "p1", "--enable", "--disable"], "provider set", "contradict each other"],
    [["provider", "set", "p1"], "provider set", "nothing to change"],
    [["provider", "price", "p1", "m", "--input", "-1", "--output", "1"], "provider price", "the input price must be a number of USD"],
    [["provider", "price", "p1", "m", "--input", "1"], "provider price", "give --input and --output"],
    [["settings", "set", "sandbox.max_total", "abc"], "settings set", "sandbox.max_total must be a whole number from 1 to 10000"],
    [["settings", "set", "bogus.key", "1"], "settings set", `unknown setting "bogus.key"`],
    [["settings", "get", "bogus.key"], "settings get", `unknown setting "bogus.key"`],
    [["channel", "set", "http", "--config", "port=abc"], "channel set", "port must be a whole number from 0 to 65535"],
    [["channel", "set", "http", "--config", "portless"], "channel set", `--config takes KEY=VALUE, got "portless"`],
    [["channel", "enable", "telegarm"], "channel enable", `unknown channel "telegarm"`],
    [["channel", "bind", "bad platform!", "1", "a1"], "channel bind", "must be letters, digits"],
    [["user", "add", "bad id!"], "user add", `user id "bad id!" must be 1–64 letters`],
    [["admin", "create", "bad id!", "--password-stdin"], "admin create", `user id "bad id!" must be 1–64 letters`],
    [["user", "set", "u1", "--default-agent", "a1", "--no-default-agent"], "user set", "contradict each other"],
    [["user", "set", "u1"], "user set", "nothing to change"],
    [["user", "link", "u1", "telegram"], "user link", "an identity is PLATFORM:ID"],
    [["user", "remove", "u1"], "user remove", "choose what happens to u1's"],
    [["playbook", "feedback", "r1", "meh"], "playbook feedback", "meh"],
    [["schedule", "add", "--agent", "a1", "--cron", "bad cron", "--prompt", "hi", "--user", "u1"], "schedule add", `cron "bad cron" has 2 field(s)`],
    [["schedule", "add", "--agent", "a1", "--every", "5m", "--tz", "Bad/Zone", "--prompt", "hi", "--user", "u1"], "schedule add", `unknown time zone "Bad/Zone"`],
    [["schedule", "add", "--agent", "a1", "--prompt", "hi", "--user", "u1"], "schedule add", "give exactly one of --cron, --every or --at"],
    [["schedule", "add", "--agent", "a1", "--every", "5m", "--prompt", "hi"], "schedule add", "give --deliver USER[@CHANNEL]"],
    [["schedule", "history", "job-none", "--limit", "0"], "schedule history", "--limit must be positive, got 0"],
    [["chat", "-p", "hi", "--session", "a#b"], "chat", `must not contain "#"`],
    [["notify", "u1", " "], "notify", "the message is empty"],
    [["plugin", "enable", "bogus"], "plugin enable", `no plugin "bogus"`],
    [["notify", "u1", "hi", "--channel", "http"], "notify", `channel "http" cannot deliver messages`],
    [["skill", "feedback", "x", "success", "--user", ""], "skill feedback", "--user needs a user id"]
  ]
  for (const [args, path, says] of cases) {
    it(`anna ${args.join(" ")}`, async () => usageError(await anna(home, ...args), path, says), 30_000)
  }

  it("a refusal that depends on what is stored stays exit 1", async () => {
    for (const args of [["agent", "show", "nobody"], ["user", "add", "u1"], ["schedule", "history", "job-none"]]) {
      const r = await anna(home, ...args)
      assert.strictEqual(r.code, 1, `${args.join(" ")}: ${r.stderr}`)
      assert.notInclude(r.stderr, "usage:")
    }
  }, 60_000)
})

describe("limits say so instead of capping silently", () => {
  it("anna memory search --limit above 100 is refused, naming the maximum", async () => {
    usageError(await anna(home, "memory", "search", "anything", "--limit", "1000"), "memory search", "--limit must be from 1 to 100, got 1000")
    const r = await anna(home, "memory", "search", "anything", "--limit", "100")
    assert.strictEqual(r.code, 0, r.stderr)
  }, 30_000)
})

describe("anna playbook add", () => {
  it("without --tags is refused: an untagged rule is never injected", async () => {
    const r = await anna(home, "playbook", "add", "--text", "Pin base image tags")
    usageError(r, "playbook add", "--tags")
    assert.include(r.stderr, "never injected")
    const list = await anna(home, "playbook", "list", "--json")
    assert.deepStrictEqual(JSON.parse(list.stdout), [], "nothing was added")
    const tagged = await anna(home, "playbook", "add", "--text", "Pin base image tags", "--tags", "docker")
    assert.strictEqual(tagged.code, 0, tagged.stderr)
    usageError(await anna(home, "playbook", "add", "--text", "Another", "--tags", " , "), "playbook add", "--tags")
  }, 60_000)
})
