/**
 * HttpAddress — where the gateway's HTTP server (the OpenAI-compatible channel, later the admin
 * UI) actually listens once it is up: the bound port is known only after `listen`, e.g. with port
 * 0 in tests. It owns nothing; the server's layer provides it for as long as the server runs.
 *
 * Layers: the HTTP server of `HttpChannel.layer` (src/layers/channels/http/server.ts).
 */
import { Context } from "effect"

export class HttpAddress extends Context.Service<HttpAddress, {
  /** The bound interface as given to `listen` after resolution, e.g. `127.0.0.1` or `::1`. */
  readonly host: string
  /** The bound port (never 0). */
  readonly port: number
  /** `http://host:port`, without a trailing slash. */
  readonly url: string
}>()("anna/HttpAddress") {}
