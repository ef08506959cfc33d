/**
 * `anna gateway` as a process: its log lines go to stderr only (stdout stays empty); its start says
 * in one WARN line when no provider or no agent is configured, and what to run; when a channel
 * cannot start, it exits 1 with one line saying which channel, why, and what to do — here, its port
 * is taken by another program.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { afterAll } from "vitest"
import { anna, finish, newHome, start, waitForOutput } from "../support/cli.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const listen = () =>
  new Promise<{ readonly server: Server; readonly port: number }>((done, fail) => {
    const server = createServer()
    server.on("error", fail)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      done({ server, port: typeof address === "object" && address !== null ? address.port : 0 })
    })
  })

/** Runs the gateway on a free port at log level info until it is ready, then stops it with SIGTERM. */
const runUntilReady = async (home: string) => {
  const child = start(home, ["gateway", "--port", "0"], "info")
  const done = finish(child)
  await Promise.race([waitForOutput(child, "press Ctrl+C to stop"), done])
  child.kill("SIGTERM")
  return done
}

const warnings = (stderr: string) => stderr.split("\n").filter((l) => / WARN \(#\d+\): /.test(l))

describe("anna gateway", () => {
  it("logs on stderr only, and warns in one line that no provider and no agent are configured", async () => {
    const home = newHome()
    homes.push(home)
    const r = await runUntilReady(home)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.strictEqual(r.stdout, "")
    assert.match(r.stderr, /\] INFO \(#\d+\): anna gateway: database .* ready/)
    assert.match(
      r.stderr,
      /\] INFO \(#\d+\): HTTP channel \(OpenAI-compatible\) on http:\/\/127\.0\.0\.1:(\d+)\/v1; web console and admin API on http:\/\/127\.0\.0\.1:\1\/; press Ctrl\+C to stop/
    )
    assert.include(r.stderr, "anna gateway: stopping")
    const warned = warnings(r.stderr)
    assert.strictEqual(warned.length, 1, r.stderr)
    assert.include(
      warned[0],
      "no model provider and no agent are configured, so no agent can answer: run `anna onboard` on a terminal (a wizard), or set OPENAI_BASE_URL and OPENAI_API_KEY (any OpenAI-compatible server) or ANTHROPIC_API_KEY and run `anna onboard --from-env` (either creates both)"
    )
  }, 30_000)

  it("warns that no agent is enabled when a provider is, naming the command; says nothing once both exist", async () => {
    const home = newHome()
    homes.push(home)
    const added = await anna(home, "provider", "add", "local", "--type", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k", "--default-model", "m1")
    assert.strictEqual(added.code, 0, added.stderr)
    const noAgent = await runUntilReady(home)
    assert.strictEqual(noAgent.stdout, "")
    assert.deepStrictEqual(warnings(noAgent.stderr).map((l) => l.replace(/^.*WARN \(#\d+\): /, "")), [
      "no agent is enabled, so nothing can answer: run `anna agent set default --model local/m1` (see `anna provider models` for the models)"
    ])
    const agent = await anna(home, "agent", "set", "default", "--model", "local/m1")
    assert.strictEqual(agent.code, 0, agent.stderr)
    const ready = await runUntilReady(home)
    assert.strictEqual(ready.code, 0, ready.stderr)
    assert.deepStrictEqual(warnings(ready.stderr), [])
  }, 60_000)

  it("exits 1 naming the channel and the fix when its port is taken", async () => {
    const home = newHome()
    homes.push(home)
    const { server, port } = await listen()
    try {
      const r = await anna(home, "gateway", "--port", String(port))
      assert.strictEqual(r.code, 1)
      const lines = r.stderr.trim().split("\n")
      assert.strictEqual(
        lines.at(-1),
        `anna: channel http could not start: 127.0.0.1:${port} is already in use (another anna gateway, or another program); stop it, or choose another with \`anna channel set http --config port=PORT\` (or \`anna gateway --port PORT\`)`
      )
      assert.notInclude(r.stdout + r.stderr, "press Ctrl+C")
    } finally {
      server.close()
    }
  }, 30_000)
})
