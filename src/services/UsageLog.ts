/**
 * UsageLog — every model call's token usage (chat and summaries, failed calls included), and the
 * counts the summarization spend guard needs.
 */
import { Context, type Effect } from "effect"
import type { StorageError } from "../domain/memory/errors.ts"
import type { Usage } from "../domain/model/types.ts"

export interface UsageEntry {
  readonly providerId: string
  readonly model: string
  readonly purpose: "chat" | "summary"
  readonly sessionKey: string
  readonly agentId: string
  readonly usage: Usage
  /** Set when the call failed. */
  readonly error?: string | undefined
}

export interface UsageTotals {
  readonly providerId: string
  readonly model: string
  readonly purpose: "chat" | "summary"
  readonly calls: number
  readonly failed: number
  readonly inputTokens: number
  readonly outputTokens: number
}

export class UsageLog extends Context.Service<UsageLog, {
  readonly record: (entry: UsageEntry) => Effect.Effect<void, StorageError>
  /** Summarizer calls (failed ones too) for a session since a time (ms). */
  readonly summaryCallsSince: (sessionKey: string, since: number) => Effect.Effect<number, StorageError>
  readonly totals: (filter?: { readonly sessionKey?: string | undefined; readonly since?: number | undefined }) => Effect.Effect<
    ReadonlyArray<UsageTotals>,
    StorageError
  >
}>()("anna/UsageLog") {}
