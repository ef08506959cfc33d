/** Provider failures, one class per thing a caller can do about it. */
import { Schema } from "effect"

/** The key is missing, wrong or revoked (401/403): fix the provider's API key. */
export class ProviderAuthError extends Schema.TaggedError<ProviderAuthError>()("ProviderAuthError", {
  provider: Schema.String,
  status: Schema.Number,
  detail: Schema.String
}) {
  override get message() {
    return `provider ${this.provider} refused the API key (HTTP ${this.status}): ${this.detail}`
  }
}

/** 429: slow down; `retryAfterMs` is what the provider asked for, when it said. */
export class ProviderRateLimited extends Schema.TaggedError<ProviderRateLimited>()("ProviderRateLimited", {
  provider: Schema.String,
  retryAfterMs: Schema.optionalKey(Schema.Number),
  detail: Schema.String
}) {
  override get message() {
    return `provider ${this.provider} is rate limiting${
      this.retryAfterMs === undefined ? "" : ` (retry after ${Math.ceil(this.retryAfterMs / 1000)} s)`
    }: ${this.detail}`
  }
}

/** The request is larger than the model's context window: compact or shorten. */
export class ContextOverflow extends Schema.TaggedError<ContextOverflow>()("ContextOverflow", {
  provider: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `the request does not fit the model's context window (${this.provider}): ${this.detail}`
  }
}

/** 400/404/422 and the like: the request (model name, parameters, message shape) is wrong. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  provider: Schema.String,
  status: Schema.Number,
  detail: Schema.String
}) {
  override get message() {
    return `provider ${this.provider} rejected the request (HTTP ${this.status}): ${this.detail}`
  }
}

/** 5xx or an overloaded service. */
export class ProviderServerError extends Schema.TaggedError<ProviderServerError>()("ProviderServerError", {
  provider: Schema.String,
  status: Schema.Number,
  detail: Schema.String
}) {
  override get message() {
    return `provider ${this.provider} failed (HTTP ${this.status}): ${this.detail}`
  }
}

/** No answer: connection refused or reset, DNS, TLS, a timeout, or a stream cut off midway. */
export class ProviderNetworkError extends Schema.TaggedError<ProviderNetworkError>()("ProviderNetworkError", {
  provider: Schema.String,
  timeout: Schema.Boolean,
  detail: Schema.String
}) {
  override get message() {
    return `${this.timeout ? "timed out talking to" : "cannot reach"} provider ${this.provider}: ${this.detail}`
  }
}

export type ProviderError =
  | ProviderAuthError
  | ProviderRateLimited
  | ContextOverflow
  | InvalidRequest
  | ProviderServerError
  | ProviderNetworkError

/** Whether a failure is worth retrying as is. */
export const isRetryable = (e: ProviderError): boolean =>
  e._tag === "ProviderRateLimited" || e._tag === "ProviderServerError" || e._tag === "ProviderNetworkError"

/** The tags of every ProviderError, to catch them all at once (`Effect.catchTag(PROVIDER_ERROR_TAGS, …)`). */
export const PROVIDER_ERROR_TAGS = [
  "ProviderAuthError",
  "ProviderRateLimited",
  "ContextOverflow",
  "InvalidRequest",
  "ProviderServerError",
  "ProviderNetworkError"
] as const satisfies ReadonlyArray<ProviderError["_tag"]>
