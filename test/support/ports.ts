/** A loopback port nothing listens on right now: the kernel's pick, released at once. */
import { createServer } from "node:net"

export const freePort = (): Promise<number> =>
  new Promise((done, fail) => {
    const server = createServer()
    server.once("error", fail)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => done(port))
    })
  })
