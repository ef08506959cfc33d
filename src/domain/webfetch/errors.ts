/** webfetch failures a caller can act on; each message is one line meant for the model and the operator. */
import { Schema } from "effect"

/** The URL (or a redirect, or an address its host resolved to) is one the SSRF guard refuses. */
export class FetchRefused extends Schema.TaggedError<FetchRefused>()("FetchRefused", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `refused ${this.url}: ${this.reason}`
  }
}

/** The fetch did not complete: DNS, connection, TLS, timeout, too many redirects, a bad response. */
export class FetchFailed extends Schema.TaggedError<FetchFailed>()("FetchFailed", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not fetch ${this.url}: ${this.reason}`
  }
}

export type WebFetchError = FetchRefused | FetchFailed
