/**
 * Secrets at rest and in output, as an operator meets them with the real CLI: `$ANNA_HOME` is 0700
 * and the database files 0600 (new or tightened at start, workspace contents untouched), and
 * `provider list`, `provider models` and `doctor` — text and JSON — never print a provider's key,
 * header values or URL credentials, even when the server echoes the request back in its error.
 */
import { assert, describe, it } from "@effect/vitest"
import { chmodSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { shownConfig } from "../../src/domain/config/channel.ts"
import { maskUrl, providerSecrets, redactSecrets } from "../../src/domain/model/types.ts"
import { annaEnv, finish, newHome, type Run, start, waitForOutput } from "../support/cli.ts"
import { sqliteHome } from "../support/suiteDatabase.ts"

/** Docker is not needed here; an unreachable engine makes doctor's sandbox check quick. */
const NO_DOCKER = { DOCKER_HOST: "unix:///nonexistent/docker.sock" }

let echo: Server
let port = 0
const tops: Array<string> = []
beforeAll(async () => {
  // A server that refuses every request and quotes it back: the URL, with its query, and every header.
  echo = createServer((req, res) => {
    res.writeHead(401, { "content-type": "application/json" })
    res.end(JSON.stringify({ error: { message: `refused ${req.url ?? ""} ${JSON.stringify(req.headers)}`, type: "invalid_request_error" } }))
  })
  await new Promise<void>((ready) => echo.listen(0, "127.0.0.1", ready))
  port = (echo.address() as AddressInfo).port
})
afterAll(async () => {
  await new Promise((closed) => echo.close(closed))
  for (const t of tops) rmSync(t, { recursive: true, force: true })
})

/** A home that does not exist yet, in a fresh temporary folder. */
const freshHome = () => {
  const top = newHome()
  tops.push(top)
  return join(top, "home")
}

const modeOf = (path: string) => statSync(path).mode & 0o7777

const run = async (home: string, ...args: ReadonlyArray<string>): Promise<Run> => annaEnv(home, NO_DOCKER, ...args)

const SECRETS = {
  password: "PassWordSecret-p1",
  key1: "sk-KeySecret-p1-abcdef0123",
  header: "HeaderSecret-p1",
  bearer: "BearerSecret-p2-0123456789",
  query: "QuerySecret-p2",
  key2: "sk-KeySecret-p2-abcdef0123",
  userToken: "UserTokenSecret-p3"
}

/** Any 8 characters in a row of a secret count as a leak (a mask shows at most 3 + 4). */
const leaks = (text: string): ReadonlyArray<string> =>
  Object.values(SECRETS).flatMap((s) => {
    for (let i = 0; i + 8 <= s.length; i++) if (text.includes(s.slice(i, i + 8))) return [`${s} (${s.slice(i, i + 8)})`]
    return []
  })

describe("secrets in output", () => {
  it("provider list, provider models and doctor mask keys, headers and URL credentials, text and JSON", async () => {
    const home = freshHome()
    const base = `http://127.0.0.1:${port}/v1`
    const adds = [
      ["p1", `http://alice:${SECRETS.password}@127.0.0.1:${port}/v1`, SECRETS.key1, [`X-Api-Key=${SECRETS.header}`]],
      ["p2", `${base}?key=${SECRETS.query}&api-version=2024-10-21`, SECRETS.key2, [`Authorization=Bearer ${SECRETS.bearer}`, `X-Trace=${SECRETS.header}`]],
      ["p3", `http://${SECRETS.userToken}@127.0.0.1:${port}/v1`, SECRETS.key1, []]
    ] as const
    const outputs: Array<Run> = []
    for (const [id, url, key, headers] of adds) {
      const r = await run(home, "provider", "add", id, "--type", "openai", "--base-url", url, "--api-key", key, "--default-model", "m1", ...headers.flatMap((h) => ["--header", h]), "--json")
      assert.strictEqual(r.code, 0, r.stderr)
      outputs.push(r)
    }
    // Independent reads, run side by side: the failing providers each take a few seconds of retries.
    const [list, json, models, modelsJson, doctor] = await Promise.all([
      run(home, "provider", "list"),
      run(home, "provider", "list", "--json"),
      run(home, "provider", "models"),
      run(home, "provider", "models", "--json"),
      run(home, "doctor")
    ])
    assert.include(list.stdout, `http://alice:***@127.0.0.1:${port}/v1`)
    assert.include(list.stdout, `${base}?key=***&api-version=2024-10-21`)
    assert.include(list.stdout, `http://***@127.0.0.1:${port}/v1`)
    const parsed = JSON.parse(json.stdout) as Array<{ id: string; headers: Record<string, string> }>
    assert.deepStrictEqual(parsed.find((p) => p.id === "p2")?.headers, { Authorization: "Bea…6789", "X-Trace": "***" })
    // The server did quote the credentials it was sent, so the errors had them to leak.
    assert.include(models.stderr, "refused")
    assert.include(doctor.stdout, "FIX  providers/p2")
    outputs.push(list, json, models, modelsJson, doctor)
    for (const r of outputs) assert.deepStrictEqual(leaks(r.stdout + r.stderr), [], r.stdout + r.stderr)
  })

  it("masks what a URL can carry and scrubs secrets from free text", () => {
    assert.strictEqual(maskUrl("https://u:p@h.example/v1?key=abc&api-version=1&x#frag"), "https://u:***@h.example/v1?key=***&api-version=1&***#***")
    assert.strictEqual(maskUrl("https://tok@h.example"), "https://***@h.example")
    assert.strictEqual(maskUrl("http://a:b@c@h.example/p@q"), "http://a:***@h.example/p@q")
    assert.strictEqual(maskUrl("http://127.0.0.1:11434/v1"), "http://127.0.0.1:11434/v1")
    assert.strictEqual(maskUrl(""), "")
    const config = {
      id: "x",
      type: "openai" as const,
      baseUrl: "https://u:s%40cretpass@h/v1?token=tok3n-value",
      apiKey: "sk-0123456789abcdef",
      models: [],
      defaultModel: "m",
      headers: { "X-Api-Key": "header-value-1" },
      enabled: true
    }
    const text = redactSecrets("GET https://u:s%40cretpass@h/v1?token=tok3n-value (pass s@cretpass) sk-0123456789abcdef header-value-1", providerSecrets(config))
    for (const s of ["s%40cretpass", "s@cretpass", "tok3n-value", "sk-0123456789abcdef", "header-value-1"]) assert.notInclude(text, s)
    // Channel settings: secret-named keys as before, and credentials in any URL value.
    assert.deepStrictEqual(shownConfig({ botToken: "123456:ABCDEFGHIJ", webhook: "https://h/x?sig=abcdef", host: "127.0.0.1", port: 8787 }), {
      botToken: "123…GHIJ",
      webhook: "https://h/x?sig=***",
      host: "127.0.0.1",
      port: 8787
    })
  })
})

describe("secrets at rest", () => {
  it("creates ANNA_HOME 0700 and the database files 0600, and tightens them when they were left open", async () => {
    const home = sqliteHome(freshHome())
    const first = await run(home, "provider", "list")
    assert.strictEqual(first.code, 0, first.stderr)
    assert.strictEqual(modeOf(home), 0o700)
    assert.strictEqual(modeOf(join(home, "anna.db")), 0o600)

    // As an older anna (or a umask of 022) left them; plus a workspace file that is the sandbox's business.
    const inside = join(home, "workspaces", "a1", "users", "u1")
    mkdirSync(inside, { recursive: true, mode: 0o755 })
    writeFileSync(join(inside, "notes.txt"), "x", { mode: 0o644 })
    chmodSync(join(home, "workspaces"), 0o755)
    chmodSync(inside, 0o755)
    chmodSync(join(inside, "notes.txt"), 0o644)
    chmodSync(home, 0o755)
    chmodSync(join(home, "anna.db"), 0o644)
    for (const f of ["anna.db-wal", "anna.db-shm"]) writeFileSync(join(home, f), "", { mode: 0o644 })
    chmodSync(join(home, "anna.db-wal"), 0o644)
    chmodSync(join(home, "anna.db-shm"), 0o644)
    writeFileSync(join(home, "chat_history"), "what I typed\n")
    chmodSync(join(home, "chat_history"), 0o644)

    // The gateway keeps the database open, so the WAL files exist while it runs.
    const gateway = start(home, ["gateway", "--port", "0"], "info", NO_DOCKER)
    const exited = finish(gateway)
    await waitForOutput(gateway, "press Ctrl+C to stop")
    try {
      assert.strictEqual(modeOf(home), 0o700)
      assert.strictEqual(modeOf(join(home, "workspaces")), 0o700)
      for (const f of ["anna.db", "anna.db-wal", "anna.db-shm", "chat_history"]) assert.strictEqual(modeOf(join(home, f)), 0o600, f)
      assert.strictEqual(modeOf(inside), 0o755)
      assert.strictEqual(modeOf(join(inside, "notes.txt")), 0o644)
    } finally {
      gateway.kill("SIGTERM")
      await exited
    }
  })

  it("doctor says when ANNA_HOME is open to others and how to fix it", async () => {
    const home = sqliteHome(freshHome())
    // A shared (sticky) folder is not chmod-ed behind the operator's back: doctor reports it instead.
    mkdirSync(home, { mode: 0o700 })
    chmodSync(home, 0o1777)
    const r = await run(home, "doctor")
    assert.strictEqual(r.code, 1)
    assert.include(r.stdout, `FIX  permissions/home: ${home} has mode 1777`)
    assert.include(r.stdout, `→ chmod 700 ${home}`)
    assert.strictEqual(modeOf(join(home, "anna.db")), 0o600)
    chmodSync(home, 0o700)
    const fixed = await run(home, "doctor", "--json")
    const checks = (JSON.parse(fixed.stdout) as { checks: Array<{ area: string; name: string; ok: boolean }> }).checks
    assert.deepStrictEqual(checks.filter((c) => c.area === "permissions").map((c) => [c.name, c.ok]), [["home", true]])
  })
})
