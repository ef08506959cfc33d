/**
 * Real MCP servers from npm for the MCP client tests: `@modelcontextprotocol/server-everything` and
 * `@modelcontextprotocol/server-filesystem`, bundled (esbuild, once per test process) into single
 * `.mjs` files that a test copies into a sandbox workspace, so they run INSIDE the container with
 * the image's Node; and server-everything over Streamable HTTP on the host (a child process on a
 * free port, reached at 127.0.0.1).
 *
 * `nodeImageReady`: the sandbox test image has /usr/local/bin/node (`anna sandbox build-image
 * --node`, as .ci/run builds it). When it lacks Node the MCP sandbox tests skip with a visible
 * message — unless ANNA_REQUIRE_DOCKER=1, where that is a failure.
 */
import { spawn } from "node:child_process"
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import Docker from "dockerode"
import { Effect } from "effect"
import { build } from "esbuild"
import { dockerReady, TEST_IMAGE } from "./docker.ts"
import { freePort } from "./ports.ts"

const PACKAGES = {
  everything: resolve(import.meta.dirname, "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
  filesystem: resolve(import.meta.dirname, "../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
} as const
export type ServerPackage = keyof typeof PACKAGES

const bundles = new Map<ServerPackage, Promise<string>>()
const bundleDir = mkdtempSync(join(tmpdir(), "anna-mcp-bundles-"))

/** The package's entry bundled into one ESM file (built once per process). */
export const bundle = (pkg: ServerPackage): Promise<string> => {
  let b = bundles.get(pkg)
  if (b === undefined) {
    const outfile = join(bundleDir, `${pkg}.mjs`)
    b = build({
      entryPoints: [PACKAGES[pkg]],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node22",
      outfile,
      logLevel: "error",
      // CommonJS dependencies call require(); an ES module has none of its own.
      banner: { js: "import { createRequire as __annaRequire } from \"node:module\"; const require = __annaRequire(import.meta.url);" }
    }).then(() => outfile)
    bundles.set(pkg, b)
  }
  return b
}

/** Copies the bundled server into `workspace/.mcp/<pkg>.mjs`; returns its path inside the container. */
export const installInto = async (workspace: string, pkg: ServerPackage): Promise<string> => {
  const target = join(workspace, ".mcp", `${pkg}.mjs`)
  mkdirSync(dirname(target), { recursive: true })
  copyFileSync(await bundle(pkg), target)
  return `/workspace/.mcp/${pkg}.mjs`
}

export const nodeImageReady: boolean = await (async () => {
  if (!dockerReady) return false
  const docker = new Docker()
  const c = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ["/usr/local/bin/node", "--version"], Entrypoint: [], HostConfig: { NetworkMode: "none" } })
  let code = -1
  try {
    await c.start()
    code = ((await c.wait()) as { StatusCode?: number }).StatusCode ?? -1
  } catch {
    code = -1
  } finally {
    await c.remove({ force: true }).catch(() => undefined)
  }
  if (code === 0) return true
  const why = `the sandbox test image ${TEST_IMAGE} has no Node (build it with: anna sandbox build-image --busybox PATH --node "$(command -v node)" --tag ${TEST_IMAGE})`
  if (process.env.ANNA_REQUIRE_DOCKER === "1") throw new Error(`ANNA_REQUIRE_DOCKER=1 but ${why}`)
  console.warn(`⚠ ${why}: the MCP sandbox tests are SKIPPED`)
  return false
})()

/**
 * Starts server-everything on the host over Streamable HTTP (`/mcp`) or SSE (`/sse`), on `port`
 * (default: a free one); resolves once it listens.
 */
export const startEverythingHttp = async (
  mode: "streamableHttp" | "sse" = "streamableHttp",
  port?: number
): Promise<{ readonly url: string; readonly port: number; readonly stop: () => Promise<void> }> => {
  const p = port ?? (await freePort())
  const child = spawn(process.execPath, [PACKAGES.everything, mode], {
    env: { ...process.env, PORT: String(p) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const ready = mode === "sse" ? `running on port ${p}` : `listening on port ${p}`
  await new Promise<void>((done, fail) => {
    let seen = ""
    const check = (d: Buffer) => {
      seen += d.toString()
      if (seen.includes(ready)) done()
    }
    child.stdout?.on("data", check)
    child.stderr?.on("data", check)
    child.on("exit", (code) => fail(new Error(`server-everything exited (${code}) before listening: ${seen}`)))
  })
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done()
      child.once("exit", () => done())
      child.kill("SIGKILL")
    })
  return { url: `http://127.0.0.1:${p}/${mode === "sse" ? "sse" : "mcp"}`, port: p, stop }
}

/** The same as a scoped Effect: the server is killed when the scope closes. */
export const everythingHttp = (mode: "streamableHttp" | "sse" = "streamableHttp", port?: number) =>
  Effect.acquireRelease(Effect.promise(() => startEverythingHttp(mode, port)), (s) => Effect.promise(s.stop))
