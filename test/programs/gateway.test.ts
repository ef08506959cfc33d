/**
 * `anna gateway` when a channel cannot start: the gateway exits 1 with one line saying which channel,
 * why, and what to do — here, its port is taken by another program.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { afterAll } from "vitest"
import { anna, newHome } from "../support/cli.ts"

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

describe("anna gateway", () => {
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
