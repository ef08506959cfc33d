/**
 * `/api/mcp-servers` (issue 24) through a real socket, admin only: adding both kinds with
 * `anna mcp add`'s checks (each refusal a 400 saying why, a name taken a 409, an unknown agent a
 * 404), header values written once and never answered back, listing (fast, or `probe=true` connecting
 * to each as `anna mcp list` does), testing one server — real server-everything over Streamable HTTP
 * answers with its tools, a dead URL and a stdio server in a deployment without a sandbox say why
 * not — and removing. A `user` gets 403 everywhere.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll, beforeAll } from "vitest"
import { Harness, harnessLayer } from "../../support/adminHarness.ts"
import { startEverythingHttp } from "../../support/mcpServers.ts"

const SECRET = "Bearer mcp-header-secret-7d1e"

let everything: Awaited<ReturnType<typeof startEverythingHttp>>
beforeAll(async () => {
  everything = await startEverythingHttp()
}, 60_000)
afterAll(async () => {
  await everything.stop()
})

interface ServerRow {
  readonly name: string
  readonly agent: string
  readonly transport: string
  readonly command: ReadonlyArray<string> | null
  readonly url: string | null
  readonly headers: Readonly<Record<string, string>>
  readonly probe: { readonly answers: boolean; readonly tools: ReadonlyArray<{ readonly name: string }>; readonly error: string | null } | null
}

layer(harnessLayer(), { excludeTestServices: true, timeout: "90 seconds" })("admin API: MCP servers", (it) => {
  it.effect("an admin adds, lists, probes, tests and removes an agent's servers; headers never come back; a user may not", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const as = (token: string) => (method: string, path: string, body?: unknown) =>
        Effect.promise(async () => {
          const r = await h.fetch(path, {
            method,
            headers: { ...h.headersOf({ bearer: token }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
          const text = await r.text()
          return { status: r.status, body: (text === "" ? null : JSON.parse(text)) as unknown }
        })
      const admin = as(h.adminToken)
      const alice = as(h.userToken)
      const message = (b: unknown) => (b as { error?: { message?: string } } | null)?.error?.message ?? JSON.stringify(b)

      // The default agent needs no row, as in the CLI.
      const remote = yield* admin("POST", "/api/mcp-servers/default", { name: "everything", url: everything.url, headers: { Authorization: SECRET } })
      assert.strictEqual(remote.status, 200, message(remote.body))
      assert.deepStrictEqual((remote.body as ServerRow).headers, { Authorization: "***" })
      const stdio = yield* admin("POST", "/api/mcp-servers/default", { name: "files", command: ["node", "/workspace/.mcp/filesystem.mjs", "/workspace"] })
      assert.deepStrictEqual([stdio.status, (stdio.body as ServerRow).command], [200, ["node", "/workspace/.mcp/filesystem.mjs", "/workspace"]])
      assert.strictEqual((yield* admin("POST", "/api/mcp-servers/default", { name: "dead", url: "http://127.0.0.1:1/mcp" })).status, 200)

      const refused = [
        [{ name: "Bad_Name", command: ["node"] }, 400, "is not a server name"],
        [{ name: "both", url: "http://127.0.0.1:1/mcp", command: ["node"] }, 400, "give either url URL"],
        [{ name: "neither" }, 400, "give either url URL"],
        [{ name: "x", url: "ftp://example.com/" }, 400, "url must be http or https"],
        [{ name: "x", url: "https://user:pw@example.com/" }, 400, "must not carry credentials"],
        [{ name: "x", url: "https://example.com/", headers: { "Bad Name": "v" } }, 400, "is not a header name"],
        [{ name: "x", url: "https://example.com/", headers: { "X-A": "v\r\nX-Injected: 1" } }, 400, "line break"],
        [{ name: "x", command: ["node"], headers: { A: "b" } }, 400, "are for remote servers"],
        [{ name: "files", command: ["node", "other.mjs"] }, 409, "already has an MCP server"]
      ] as const
      for (const [body, status, text] of refused) {
        const r = yield* admin("POST", "/api/mcp-servers/default", body)
        assert.strictEqual(r.status, status, `${JSON.stringify(body)}: ${message(r.body)}`)
        assert.include(message(r.body), text)
      }
      assert.strictEqual((yield* admin("POST", "/api/mcp-servers/nobody", { name: "x", command: ["node"] })).status, 404)
      assert.strictEqual((yield* admin("GET", "/api/mcp-servers/nobody")).status, 404)

      // A plain list connects to nothing.
      const listed = (yield* admin("GET", "/api/mcp-servers/default")).body as ReadonlyArray<ServerRow>
      assert.deepStrictEqual(listed.map((s) => [s.name, s.transport, s.probe]), [["dead", "http", null], ["everything", "http", null], ["files", "stdio", null]])

      // probe=true asks each, as `anna mcp list`: the live one answers with its tools, the others say why not.
      const probed = (yield* admin("GET", "/api/mcp-servers/default?probe=true")).body as ReadonlyArray<ServerRow>
      const byName = new Map(probed.map((s) => [s.name, s.probe]))
      assert.isTrue(byName.get("everything")?.answers, byName.get("everything")?.error ?? "")
      assert.includeMembers(byName.get("everything")?.tools.map((t) => t.name) ?? [], ["echo", "get-sum"])
      assert.isFalse(byName.get("dead")?.answers)
      assert.isString(byName.get("dead")?.error)
      assert.isFalse(byName.get("files")?.answers)
      assert.include(byName.get("files")?.error ?? "", "no sandbox")

      // Test one.
      const tested = yield* admin("POST", "/api/mcp-servers/default/everything/test")
      assert.strictEqual(tested.status, 200, message(tested.body))
      assert.isTrue((tested.body as ServerRow).probe?.answers)
      assert.strictEqual((yield* admin("POST", "/api/mcp-servers/default/nope/test")).status, 404)

      // A user: nothing of it.
      for (const [method, path, body] of [
        ["GET", "/api/mcp-servers/default", undefined],
        ["POST", "/api/mcp-servers/default", { name: "mine", url: everything.url }],
        ["POST", "/api/mcp-servers/default/everything/test", undefined],
        ["DELETE", "/api/mcp-servers/default/everything", undefined]
      ] as const) {
        const r = yield* alice(method, path, body)
        assert.strictEqual(r.status, 403, `${method} ${path}`)
      }

      // Removed once; the second time it is not there.
      assert.strictEqual((yield* admin("DELETE", "/api/mcp-servers/default/dead")).status, 204)
      assert.strictEqual((yield* admin("DELETE", "/api/mcp-servers/default/dead")).status, 404)
      assert.deepStrictEqual(((yield* admin("GET", "/api/mcp-servers/default")).body as ReadonlyArray<ServerRow>).map((s) => s.name), ["everything", "files"])

      // The header's value was written once and never answered back.
      for (const body of h.bodies) assert.notInclude(body, SECRET)
    }))
})
