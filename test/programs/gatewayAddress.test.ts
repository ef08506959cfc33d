/**
 * Where the running gateway serves, as the other commands learn it (issue 24, item 4): the gateway
 * takes `--host`/`--port` as `anna --port P` too (so `npm start -- --port P` works), publishes the
 * address it really bound in `$ANNA_HOME/gateway.json`, and `anna doctor` and `anna admin create`
 * name that address instead of the configured one. A second gateway on the same ANNA_HOME is refused
 * in one line; a gateway killed with SIGKILL leaves nothing that stops the next one.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { anna, annaEnv, finish, MAIN, newHome, type Run, start, waitForLine } from "../support/cli.ts"
import { freePort } from "../support/ports.ts"
import { childEnv } from "../support/spawnAnna.ts"

const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const homes: Array<string> = []
const children: Array<ChildProcess> = []
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}

const READY = /HTTP channel \(OpenAI-compatible\) on http:\/\/127\.0\.0\.1:(\d+)\/v1.*press Ctrl\+C to stop/

/** Starts a gateway with `args` and resolves once it serves, with the port it says it serves. */
const gateway = async (h: string, args: ReadonlyArray<string>) => {
  const child = start(h, args, "info", NO_DOCKER)
  children.push(child)
  const exited = finish(child)
  const port = await waitForLine(child, (line) => {
    const m = READY.exec(line)
    return m === null ? undefined : Number(m[1])
  })
  return { child, exited, port }
}

interface Check {
  readonly area: string
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

const httpCheck = async (h: string): Promise<Check | undefined> => {
  const r = await annaEnv(h, NO_DOCKER, "doctor", "--json")
  return (JSON.parse(r.stdout) as { checks: Array<Check> }).checks.find((c) => c.area === "channels" && c.name === "http")
}

/** `anna …` with `input` on its stdin. */
const annaIn = (h: string, input: string, ...args: ReadonlyArray<string>): Promise<Run> => {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...childEnv(h, {}), ANNA_LOG_LEVEL: "warn" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end(input)
  return finish(child)
}

const health = async (port: number) => (await fetch(`http://127.0.0.1:${port}/health`)).json()

describe("the gateway's address", () => {
  it("anna doctor checks the port a gateway on --port 0 really serves, names that gateway, and the configured one once it stopped", async () => {
    const h = home()
    const g = await gateway(h, ["gateway", "--port", "0"])
    assert.notStrictEqual(g.port, 8787)
    const published = JSON.parse(readFileSync(join(h, "gateway.json"), "utf8")) as Record<string, unknown>
    assert.deepInclude(published, { pid: g.child.pid, host: "127.0.0.1", port: g.port, url: `http://127.0.0.1:${g.port}` })
    const serving = await httpCheck(h)
    assert.strictEqual(serving?.ok, true)
    assert.strictEqual(
      serving?.detail,
      `enabled, OpenAI-compatible API on 127.0.0.1:${g.port}: listening (served by the running gateway, pid ${g.child.pid})`
    )
    g.child.kill("SIGTERM")
    assert.strictEqual((await g.exited).code, 0)
    assert.isFalse(existsSync(join(h, "gateway.json")), "a clean stop removes gateway.json")
    const stopped = await httpCheck(h)
    assert.match(stopped?.detail ?? "", /^enabled, OpenAI-compatible API on 127\.0\.0\.1:8787: /)
  })

  it("anna admin create prints the address the running gateway serves", async () => {
    const h = home()
    const g = await gateway(h, ["gateway", "--port", "0"])
    try {
      const r = await annaIn(h, "tr0ub4dor & 3\n", "admin", "create", "alice", "--password-stdin")
      assert.strictEqual(r.code, 0, r.stderr)
      assert.include(r.stdout, `Open http://127.0.0.1:${g.port}/ and log in as alice (the gateway serves it now).`)
      const j = await annaIn(h, "tr0ub4dor & 4\n", "admin", "create", "bob", "--password-stdin", "--json")
      assert.strictEqual((JSON.parse(j.stdout) as { url: string }).url, `http://127.0.0.1:${g.port}/`)
    } finally {
      g.child.kill("SIGTERM")
      await g.exited
    }
  })

  it("anna --host H --port P runs the gateway on P, as anna gateway --port P does", async () => {
    const h = home()
    const port = await freePort()
    const g = await gateway(h, ["--host", "127.0.0.1", "--port", String(port)])
    try {
      assert.strictEqual(g.port, port)
      assert.deepStrictEqual(await health(port), { ok: true })
    } finally {
      g.child.kill("SIGTERM")
    }
    const r = await g.exited
    assert.strictEqual(r.code, 0, r.stderr)
    const eq = await gateway(h, [`--port=${port}`])
    eq.child.kill("SIGTERM")
    assert.strictEqual(eq.port, port)
    assert.strictEqual((await eq.exited).code, 0)
  })

  it("refuses --host/--port before a command in one line, exit 2", async () => {
    const h = home()
    for (const args of [["--port", "9000", "doctor"], ["--host=0.0.0.0", "memory", "stats"], ["--port", "1", "gateway"]]) {
      const r = await anna(h, ...args)
      assert.strictEqual(r.code, 2, `${args.join(" ")}: ${r.stderr}`)
      assert.strictEqual(r.stdout, "")
      const command = args.at(-1) === "stats" ? "memory" : args.at(-1)
      assert.strictEqual(
        r.stderr.trimEnd().split("\n")[0],
        `anna: --host, --port and --database-url belong to the gateway: \`anna --port P\` or \`anna gateway --port P\`, not before \`${command}\``
      )
      assert.notInclude(r.stderr, "    at ")
    }
  })

  it("refuses a second gateway on the same ANNA_HOME in one line; after a SIGKILL of the first, a new one starts", async () => {
    const h = home()
    const first = await gateway(h, ["gateway", "--port", "0"])
    const second = await annaEnv(h, NO_DOCKER, "gateway", "--port", "0")
    assert.strictEqual(second.code, 1, second.stderr)
    assert.strictEqual(
      second.stderr,
      `anna: another anna gateway (pid ${first.child.pid}) already runs on this ANNA_HOME (serving http://127.0.0.1:${first.port}); stop it first\n`
    )
    // The same port too: refused for the gateway, not for the port.
    const same = await annaEnv(h, NO_DOCKER, "--port", String(first.port))
    assert.strictEqual(same.code, 1, same.stderr)
    assert.include(same.stderr, `another anna gateway (pid ${first.child.pid}) already runs`)
    assert.deepStrictEqual(await health(first.port), { ok: true })

    first.child.kill("SIGKILL")
    await first.exited
    // Stale: the file stays, but nothing reads it as a running gateway.
    assert.isTrue(existsSync(join(h, "gateway.json")))
    const stale = await httpCheck(h)
    assert.match(stale?.detail ?? "", /^enabled, OpenAI-compatible API on 127\.0\.0\.1:8787: /)
    const next = await gateway(h, ["gateway", "--port", "0"])
    try {
      const published = JSON.parse(readFileSync(join(h, "gateway.json"), "utf8")) as { pid: number; port: number }
      assert.deepStrictEqual([published.pid, published.port], [next.child.pid, next.port])
    } finally {
      next.child.kill("SIGTERM")
      assert.strictEqual((await next.exited).code, 0)
    }
  })

  it("publishes the new address when the HTTP channel restarts with new settings", async () => {
    const h = home()
    const set = await annaEnv(h, NO_DOCKER, "channel", "set", "http", "--config", "port=0")
    assert.strictEqual(set.code, 0, set.stderr)
    const g = await gateway(h, ["gateway"])
    try {
      const port = await freePort()
      const restarted = waitForLine(g.child, (line) => (line.includes(`channel http: HTTP channel (OpenAI-compatible) on http://127.0.0.1:${port}/v1`) ? true : undefined))
      const changed = await annaEnv(h, NO_DOCKER, "channel", "set", "http", "--config", `port=${port}`)
      assert.strictEqual(changed.code, 0, changed.stderr)
      await restarted
      const check = await httpCheck(h)
      assert.strictEqual(check?.detail, `enabled, OpenAI-compatible API on 127.0.0.1:${port}: listening (served by the running gateway, pid ${g.child.pid})`)
    } finally {
      g.child.kill("SIGTERM")
      await g.exited
    }
  })
})
