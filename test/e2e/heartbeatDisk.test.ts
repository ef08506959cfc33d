/**
 * The heartbeat of a running gateway (the built binary) finds HEARTBEAT.md in a user's workspace
 * that is a filesystem of its own even when that filesystem is not mounted — after a reboot, or
 * `anna sandbox unmount` — because it mounts it through the gateway's Sandbox before it looks.
 */
import { assert, describe, it } from "@effect/vitest"
import { annaEnv, finish, newHome, start, waitForOutput } from "../support/cli.ts"
import { diskMountable, dockerReady, TEST_IMAGE } from "../support/docker.ts"
import { fakeLlmSuite } from "../support/fakeLlm/suite.ts"

const suite = fakeLlmSuite()

describe.skipIf(!dockerReady || !diskMountable)("e2e: the heartbeat and a workspace's own filesystem", () => {
  it("a gateway's heartbeat acts on HEARTBEAT.md in an unmounted workspace filesystem", async () => {
    const fake = suite.fake
    const home = suite.keep(newHome())
    const env = { OPENAI_BASE_URL: fake.openAiUrl, OPENAI_API_KEY: "sk-heartbeat" }
    const cli = async (...args: Array<string>) => {
      const r = await annaEnv(home, env, ...args)
      assert.strictEqual(r.code, 0, `anna ${args.join(" ")}: ${r.stderr}`)
      return r.stdout
    }
    await cli("onboard", "--from-env")
    await cli("agent", "set", "default", "--image", TEST_IMAGE, "--tools", "bash")
    await cli("user", "add", "alice")
    await cli("sandbox", "exec", "--agent", "default", "--user", "alice", "--", "sh", "-c", "echo 'check the build' > /workspace/HEARTBEAT.md")
    await cli("sandbox", "unmount")
    await cli("channel", "disable", "http")
    await cli("settings", "set", "scheduler.heartbeat_interval", "1s")
    const beat = new Promise<void>((resolve) => {
      fake.respondWith((req) => {
        if (JSON.stringify(req.body).includes("Read HEARTBEAT.md")) resolve()
        return { kind: "reply", parts: [{ type: "text", text: "HEARTBEAT_OK" }] }
      })
    })
    const gateway = start(home, ["gateway"], "info", env)
    let log = ""
    gateway.stderr?.on("data", (d: Buffer) => (log += d.toString()))
    const done = finish(gateway)
    try {
      await waitForOutput(gateway, "press Ctrl+C")
      await beat
      const history = JSON.parse(await cli("schedule", "history", "heartbeat:default:alice", "--json")) as ReadonlyArray<{ status: string }>
      assert.isAtLeast(history.length, 1, log)
    } finally {
      gateway.kill("SIGTERM")
    }
    assert.strictEqual((await done).code, 0, log)
  }, 120_000)
})
