/**
 * `anna doctor` on channels, with the real CLI and gateway: the HTTP channel is enabled by default
 * and doctor says so, says whether it is being served right now, and says when none is enabled.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import { freePort } from "../support/ports.ts"

const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }
const tops: Array<string> = []
afterAll(() => {
  for (const t of tops) rmSync(t, { recursive: true, force: true })
})

interface Check {
  readonly area: string
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

const channelChecks = async (home: string): Promise<ReadonlyArray<Check>> => {
  const r = await annaEnv(home, NO_DOCKER, "doctor", "--json")
  return (JSON.parse(r.stdout) as { checks: Array<Check> }).checks.filter((c) => c.area === "channels")
}

describe("anna doctor: channels", () => {
  it("reports the HTTP channel enabled, whether the gateway serves it now, and none when it is disabled", async () => {
    const top = newHome()
    tops.push(top)
    const home = join(top, "home")
    const port = await freePort()
    const set = await annaEnv(home, NO_DOCKER, "channel", "set", "http", "--config", `port=${port}`)
    assert.strictEqual(set.code, 0, set.stderr)

    const idle = await channelChecks(home)
    assert.deepStrictEqual(idle.map((c) => [c.name, c.ok]), [["http", true]])
    assert.include(idle[0]?.detail, `enabled, OpenAI-compatible API on 127.0.0.1:${port}: nothing listens now`)

    const gateway = start(home, ["gateway"], "info", NO_DOCKER)
    const exited = finish(gateway)
    await waitForOutput(gateway, "press Ctrl+C to stop")
    try {
      const serving = await channelChecks(home)
      assert.include(serving[0]?.detail, `on 127.0.0.1:${port}: listening`)
    } finally {
      gateway.kill("SIGTERM")
      await exited
    }

    const disabled = await annaEnv(home, NO_DOCKER, "channel", "disable", "http")
    assert.strictEqual(disabled.code, 0, disabled.stderr)
    const none = await channelChecks(home)
    assert.deepStrictEqual(none.map((c) => [c.name, c.ok]), [["channels", true]])
    assert.include(none[0]?.detail, "none enabled")
  })
})
