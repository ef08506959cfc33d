/**
 * The admin API in the real gateway process (`anna gateway`): served on the HTTP channel's port
 * with the OpenAPI document and the console's page, logging in with an account made by `anna admin
 * create`, and a change made through the API seen by the CLI on the same database.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import { anna, finish, MAIN, newHome, start, waitForLine } from "../../support/cli.ts"
import { childEnv } from "../../support/spawnAnna.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

const createAdmin = (home: string, user: string, password: string) => {
  const child = spawn(process.execPath, [MAIN, "admin", "create", user, "--role", "admin", "--password-stdin"], {
    env: { ...childEnv(home, {}), ANNA_LOG_LEVEL: "warn" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  child.stdin.end(`${password}\n`)
  return finish(child)
}

describe("admin API in anna gateway", () => {
  it("serves /api (OpenAPI, login, changes the CLI sees, the channels' states) and the console on the HTTP channel's port", async () => {
    const home = newHome()
    homes.push(home)
    const made = await createAdmin(home, "root", "root-password-1")
    assert.strictEqual(made.code, 0, made.stderr)
    const child = start(home, ["gateway", "--port", "0"], "info")
    const done = finish(child)
    try {
      const url = await waitForLine(child, (line) => /HTTP channel \(OpenAI-compatible\) on (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(line)?.[1])

      const doc = await fetch(`${url}/api/openapi.json`)
      assert.strictEqual(doc.status, 200)
      assert.property(((await doc.json()) as { paths: object }).paths, "/api/agents/{id}")

      assert.strictEqual((await fetch(`${url}/api/agents`)).status, 401)
      const login = await fetch(`${url}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "root", password: "root-password-1" })
      })
      assert.strictEqual(login.status, 200)
      const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
      const { csrfToken } = (await login.json()) as { csrfToken: string }
      const set = await fetch(`${url}/api/agents/helper`, {
        method: "PUT",
        headers: { cookie, "x-csrf-token": csrfToken, "content-type": "application/json" },
        body: JSON.stringify({ systemPrompt: "Set through the API." })
      })
      assert.strictEqual(set.status, 200, await set.clone().text())
      const shown = await anna(home, "agent", "show", "helper", "--json")
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.strictEqual((JSON.parse(shown.stdout) as { systemPrompt: string }).systemPrompt, "Set through the API.")

      // The channels' states come from the running gateway.
      const channels = (await (await fetch(`${url}/api/channels`, { headers: { cookie } })).json()) as ReadonlyArray<{ id: string; state?: string; description?: string }>
      const http = channels.find((c) => c.id === "http")
      assert.strictEqual(http?.state, "running")
      assert.include(http?.description ?? "", url)
      assert.strictEqual(channels.find((c) => c.id === "telegram")?.state, "stopped")

      const page = await fetch(`${url}/`, { headers: { accept: "text/html" } })
      assert.strictEqual(page.status, 200)
      assert.include(page.headers.get("content-type") ?? "", "text/html")
      assert.include(page.headers.get("content-security-policy") ?? "", "default-src 'self'")
      // The OpenAI-compatible channel is still there, and unknown paths still get its 404.
      assert.strictEqual((await fetch(`${url}/health`)).status, 200)
      assert.strictEqual((await fetch(`${url}/v1/nothing`)).status, 404)
    } finally {
      child.kill("SIGTERM")
    }
    const r = await done
    assert.strictEqual(r.code, 0, r.stderr)
  }, 60_000)
})
