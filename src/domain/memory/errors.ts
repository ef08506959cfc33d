/** Failures of the memory subsystem that a caller can act on (one class per failure). */
import { Schema } from "effect"
import { ProviderDisabled, ProviderNotFound } from "../config/errors.ts"
import {
  ContextOverflow,
  InvalidRequest,
  ProviderAuthError,
  ProviderNetworkError,
  ProviderRateLimited,
  ProviderServerError
} from "../model/errors.ts"

export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", {
  sessionKey: Schema.String
}) {
  override get message() {
    return `no session "${this.sessionKey}" in memory`
  }
}

export class SummaryNotFound extends Schema.TaggedError<SummaryNotFound>()("SummaryNotFound", {
  summaryId: Schema.String
}) {
  override get message() {
    return `no summary "${this.summaryId}"`
  }
}

/** Input that memory will not store or use as given: the reason says what to change. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/**
 * The summarizer did not call its model at all: the provider failed recently (its retries spent) and
 * its circuit breaker stays open until `retryAtMs` (epoch ms). `reason` is the failure that opened it.
 */
export class SummarizerCircuitOpen extends Schema.TaggedError<SummarizerCircuitOpen>()("SummarizerCircuitOpen", {
  provider: Schema.String,
  retryAtMs: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `no summary call to provider ${this.provider} before ${new Date(this.retryAtMs).toISOString()}: ${this.reason}`
  }
}

/**
 * What made the summarizer's model unusable, as data: the provider's typed failure (its `detail`
 * scrubbed of the provider's secrets by the summarizer), the provider missing or disabled, or its
 * breaker open after such failures. Lets compaction tell a rate limit from bad credentials.
 */
export const SummarizerCause = Schema.Union([
  ProviderAuthError,
  ProviderRateLimited,
  ContextOverflow,
  InvalidRequest,
  ProviderServerError,
  ProviderNetworkError,
  ProviderNotFound,
  ProviderDisabled,
  SummarizerCircuitOpen
])
export type SummarizerCause = typeof SummarizerCause.Type

/** The summarizer (a model, usually) could not produce a summary; `cause` says why when a provider did. */
export class SummarizerError extends Schema.TaggedError<SummarizerError>()("SummarizerError", {
  reason: Schema.String,
  cause: Schema.optionalKey(SummarizerCause)
}) {
  override get message() {
    return `summarizer failed: ${this.reason}`
  }
}

/** Who set a spend guard's limit: the agent (`--summary-max-calls`), anna's default (no agent), or this run (`anna memory compact --max-summary-calls`). */
export const SpendGuardSetBy = Schema.Literals(["agent", "default", "run"])

/**
 * The session made as many summarizer calls as its agent allows in the current window: compaction
 * stops (stop reason `spend_guard`) instead of spending more.
 */
export class SpendGuardExceeded extends Schema.TaggedError<SpendGuardExceeded>()("SpendGuardExceeded", {
  sessionKey: Schema.String,
  calls: Schema.Number,
  windowSeconds: Schema.Number,
  /** The limit reached, and who set it (so that the person told can raise the right one). */
  limit: Schema.Number,
  setBy: SpendGuardSetBy,
  /** The agent whose limit it is ("" when no agent exists and anna's default applied). */
  agentId: Schema.String
}) {
  override get message() {
    return `session ${this.sessionKey} reached its summarization limit (${this.calls} of ${this.limit} calls in ${this.windowSeconds} s)`
  }
}

/** A summary came back longer than 150 % of its target: the escalation pipeline tries harder. */
export class SummaryTooLong extends Schema.TaggedError<SummaryTooLong>()("SummaryTooLong", {
  mode: Schema.Literals(["normal", "aggressive"]),
  tokens: Schema.Number,
  target: Schema.Number,
  text: Schema.String
}) {}

/** Compaction stopped on a summarizer failure; steps committed before it stay, the failed one left nothing. */
export class CompactionFailed extends Schema.TaggedError<CompactionFailed>()("CompactionFailed", {
  sessionKey: Schema.String,
  reason: Schema.String,
  committedSteps: Schema.Number
}) {
  override get message() {
    return `compaction of "${this.sessionKey}" stopped after ${this.committedSteps} committed step(s): ${this.reason}`
  }
}

/** The enabled memory plugin lacks a capability (e.g. memory/simple cannot search). */
export class CapabilityMissing extends Schema.TaggedError<CapabilityMissing>()("CapabilityMissing", {
  capability: Schema.String
}) {
  override get message() {
    return `the enabled memory plugin has no ${this.capability} capability (enable memory/lcm: anna plugin enable memory/lcm)`
  }
}

/** The live items a compaction step planned to replace are no longer live (another writer got there first). */
export class StaleContext extends Schema.TaggedError<StaleContext>()("StaleContext", {
  conversationId: Schema.Number
}) {}

/**
 * An embeddings call failed (dense retrieval, issue 25). `retryable`: a rate limit, a server error
 * or the network, worth trying again later; otherwise the request itself was refused.
 */
export class EmbeddingError extends Schema.TaggedError<EmbeddingError>()("EmbeddingError", {
  /** PROVIDER/MODEL. */
  model: Schema.String,
  reason: Schema.String,
  retryable: Schema.Boolean,
  /**
   * The provider refused the texts themselves (an invalid request, or one over the model's input
   * limit): other texts may pass. Absent: not known to be about the texts (a bad key, a dead server).
   */
  input: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return `embedding with ${this.model} failed: ${this.reason}`
  }
}

/**
 * The agent made as many embedding calls as its spend guard allows in the current window (its
 * summary limit, `--summary-max-calls` per `--summary-window-minutes`): no call is made.
 */
export class EmbeddingGuardExceeded extends Schema.TaggedError<EmbeddingGuardExceeded>()("EmbeddingGuardExceeded", {
  agentId: Schema.String,
  calls: Schema.Number,
  limit: Schema.Number,
  windowSeconds: Schema.Number
}) {
  override get message() {
    return `agent ${this.agentId} reached its embedding limit (${this.calls} of ${this.limit} calls in ${this.windowSeconds} s)`
  }
}
