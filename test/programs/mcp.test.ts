/**
 * `anna mcp add|list|remove` through the real CLI (the built dist/main.js in a child process): both kinds of
 * server, bad input as one clear line (exit 2 for usage), header values never printed, and `list`
 * connecting to each server — remote server-everything on 127.0.0.1 answering, a dead one reported
 * as not answering, and (with Docker and a Node image) a stdio server started in the agent's sandbox.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { afterAll } from "vitest"
import { anna, annaEnv, annaJson, newHome } from "../support/cli.ts"
import Docker from "dockerode"
import { BUSYBOX, dockerReady, TEST_IMAGE } from "../support/docker.ts"
import { installInto, nodeImageReady, startEverythingHttp } from "../support/mcpServers.ts"
import { removeTemp } from "../support/cleanup.ts"

const homes: Array<string> = []
const home = () => {
  const h = newHome()
  homes.push(h)
  return h
}
afterAll(async () => {
  for (const h of homes) await removeTemp(h)
})

interface Listed {
  readonly name: string
  readonly agent: string
  readonly transport: string
  readonly command?: ReadonlyArray<string>
  readonly url?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly answers: boolean
  readonly tools: ReadonlyArray<{ readonly name: string; readonly description: string }>
  readonly error?: string
}

describe("anna mcp add|list|remove", () => {
  it("adds both kinds, refuses bad input with one line, masks headers, removes", async () => {
    const h = home()
    const stdio = await anna(h, "mcp", "add", "files", "--", "node", "/workspace/.mcp/filesystem.mjs", "/workspace")
    assert.strictEqual(stdio.code, 0, stdio.stderr)
    assert.strictEqual(stdio.stdout.trim(), "Added MCP server files (stdio: node /workspace/.mcp/filesystem.mjs /workspace) for agent default.")
    const added = await annaJson<Listed>(h, "mcp", "add", "web", "--url", "https://mcp.example.com/mcp", "--header", "Authorization=Bearer s3cret", "--header", "X-Team: blue")
    assert.deepStrictEqual(added.headers, { Authorization: "***", "X-Team": "***" })
    assert.strictEqual(added.transport, "http")

    const usage = async (args: ReadonlyArray<string>, text: string) => {
      const r = await anna(h, "mcp", "add", ...args)
      assert.strictEqual(r.code, 2, `${args.join(" ")}: ${r.stderr}`)
      assert.include(r.stderr.split("\n")[0], text)
    }
    await usage(["both", "--url", "http://127.0.0.1:1/mcp", "--", "node", "x.mjs"], "give either --url URL (a remote server) or -- COMMAND…")
    await usage(["neither"], "give either --url URL")
    await usage(["Bad_Name", "--", "node"], `"Bad_Name" is not a server name`)
    await usage(["x", "--url", "ftp://example.com/"], "--url must be http or https")
    await usage(["x", "--url", "https://user:pw@example.com/"], "--url must not carry credentials")
    await usage(["x", "--url", "https://example.com/", "--header", "no-separator"], "--header takes NAME=VALUE")
    await usage(["x", "--header", "A=b", "--", "node"], "--header and --transport are for remote servers")

    const dup = await anna(h, "mcp", "add", "files", "--", "node", "other.mjs")
    assert.strictEqual(dup.code, 1)
    assert.strictEqual(dup.stderr.trim(), `anna: agent default already has an MCP server "files" (remove it first: anna mcp remove files --agent default)`)
    const noAgent = await anna(h, "mcp", "add", "x", "--agent", "nobody", "--", "node")
    assert.strictEqual(noAgent.code, 1)
    assert.include(noAgent.stderr, `no agent "nobody"`)

    const listed = await anna(h, "mcp", "list")
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.notInclude(listed.stdout + listed.stderr, "s3cret")
    assert.include(listed.stdout, "(headers: Authorization, X-Team)")

    const removed = await anna(h, "mcp", "remove", "web")
    assert.strictEqual(removed.stdout.trim(), "Removed MCP server web of agent default.")
    const again = await anna(h, "mcp", "remove", "web")
    assert.strictEqual(again.code, 1)
    assert.strictEqual(again.stderr.trim(), `anna: agent default has no MCP server "web" (see: anna mcp list --agent default)`)
    const rest = await annaJson<ReadonlyArray<Listed>>(h, "mcp", "list", "--agent", "default")
    assert.deepStrictEqual(rest.map((s) => s.name), ["files"])
  })

  it("list --json connects to each remote server: one answers with its tools, a dead one does not", async () => {
    const h = home()
    const server = await startEverythingHttp()
    try {
      assert.strictEqual((await anna(h, "mcp", "add", "live", "--url", server.url, "--header", "Authorization=Bearer s3cret")).code, 0)
      assert.strictEqual((await anna(h, "mcp", "add", "dead", "--url", "http://127.0.0.1:9/mcp")).code, 0)
      const r = await anna(h, "mcp", "list", "--json")
      assert.strictEqual(r.code, 0, r.stderr)
      assert.notInclude(r.stdout + r.stderr, "s3cret")
      const [dead, live] = JSON.parse(r.stdout) as ReadonlyArray<Listed>
      assert.strictEqual(live?.name, "live")
      assert.isTrue(live?.answers)
      assert.deepStrictEqual(live?.headers, { Authorization: "***" })
      assert.include(live?.tools.map((t) => t.name), "echo")
      assert.strictEqual(dead?.name, "dead")
      assert.isFalse(dead?.answers)
      assert.deepStrictEqual(dead?.tools, [])
      assert.include(dead?.error, "cannot connect to http://127.0.0.1:9/mcp")
    } finally {
      await server.stop()
    }
  })
})

describe("anna mcp list without Docker", () => {
  it("reports a stdio server as not answering because the sandbox cannot start; nothing runs on the host", async () => {
    const h = home()
    // A command that would leave a mark on the host if it ever ran there.
    const mark = join(h, "ran-on-host")
    assert.strictEqual((await anna(h, "mcp", "add", "local", "--", "sh", "-c", `touch ${mark}`)).code, 0)
    const r = await annaEnv(h, { DOCKER_HOST: "unix:///nonexistent/docker.sock" }, "mcp", "list", "--json")
    assert.strictEqual(r.code, 0, r.stderr)
    const [local] = JSON.parse(r.stdout) as ReadonlyArray<Listed>
    assert.isFalse(local?.answers)
    assert.include(local?.error, "in the sandbox: Docker is not reachable")
    assert.isFalse(existsSync(mark), "the stdio command ran on the host")
  })
})

describe.skipIf(!nodeImageReady)("anna mcp list: a stdio server in the agent's sandbox (real Docker engine)", () => {
  it("starts server-everything in the agent's sandbox and lists its tools", async () => {
    const h = home()
    assert.strictEqual((await anna(h, "agent", "set", "mcpcli", "--image", TEST_IMAGE)).code, 0)
    const workspace = join(h, "workspaces", "mcpcli", "shared")
    mkdirSync(workspace, { recursive: true })
    const path = await installInto(workspace, "everything")
    assert.strictEqual((await anna(h, "mcp", "add", "everything", "--agent", "mcpcli", "--", "node", path, "stdio")).code, 0)
    assert.strictEqual((await anna(h, "mcp", "add", "missing", "--agent", "mcpcli", "--", "node", "/workspace/nope.mjs")).code, 0)
    const listed = await annaJson<ReadonlyArray<Listed>>(h, "mcp", "list", "--agent", "mcpcli")
    const everything = listed.find((s) => s.name === "everything")
    assert.isTrue(everything?.answers, everything?.error)
    assert.includeMembers(everything?.tools.map((t) => t.name) ?? [], ["echo", "get-sum"])
    const missing = listed.find((s) => s.name === "missing")
    assert.isFalse(missing?.answers)
    assert.match(missing?.error ?? "", /exited \(code 1\).*Cannot find module/)
  })
})

describe.skipIf(!dockerReady)("anna sandbox build-image --node (real Docker engine)", () => {
  it("copies Node, its libraries and loader into the busybox image; node runs there", async () => {
    const h = home()
    const tag = `anna-sandbox:node-build-${process.pid}`
    try {
      const built = await anna(h, "sandbox", "build-image", "--busybox", BUSYBOX, "--node", process.execPath, "--tag", tag)
      assert.strictEqual(built.code, 0, built.stderr)
      assert.include(built.stdout, `Built image ${tag}; /bin/sh runs in it (and /usr/local/bin/node).`)
      const ran = await annaEnv(h, {}, "sandbox", "exec", "--image", tag, "--", "node", "-e", "console.log(process.version, 6 * 7)")
      assert.strictEqual(ran.code, 0, ran.stderr)
      assert.strictEqual(ran.stdout.trim(), `${process.version} 42`)
    } finally {
      await new Docker().getImage(tag).remove({ force: true }).catch(() => undefined)
    }
  })

  it("refuses --node with --rootfs", async () => {
    const r = await anna(home(), "sandbox", "build-image", "--rootfs", "/nonexistent", "--node", process.execPath)
    assert.strictEqual(r.code, 2)
    assert.include(r.stderr.split("\n")[0], "--node adds Node to a busybox image")
  })
})
