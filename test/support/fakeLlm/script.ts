/**
 * What a test tells the fake LLM server to answer, protocol-neutral. Each protocol module turns a
 * Scripted answer into exactly what that service sends on the wire (JSON or SSE, its event names,
 * its error bodies).
 */
export type ScriptPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_call"; readonly id: string; readonly name: string; readonly input: unknown }

export type Scripted =
  | {
    readonly kind: "reply"
    readonly parts: ReadonlyArray<ScriptPart>
    /** Defaults: input = request size / 4, output = reply size / 4. */
    readonly usage?: { readonly input: number; readonly output: number }
    /** Defaults to tool_use when a tool call is present, else end. */
    readonly stop?: "end" | "tool_use" | "max_tokens"
    /** Text deltas of at most this many characters (default 8); tool arguments likewise. */
    readonly chunk?: number
  }
  | {
    readonly kind: "error"
    readonly status: number
    readonly message?: string
    /** Seconds, sent as `retry-after`. */
    readonly retryAfter?: number
    /** Answer as that service says "the prompt is too long". */
    readonly contextOverflow?: boolean
  }
  /**
   * Streams the first `afterEvents` SSE events of the reply, then destroys the socket — or, with
   * `stall`, keeps the connection open and sends nothing more.
   */
  | {
    readonly kind: "disconnect"
    readonly parts: ReadonlyArray<ScriptPart>
    readonly afterEvents: number
    readonly stall?: boolean
  }
  /** Accepts the request and never answers (for timeouts and cancellation). */
  | { readonly kind: "hang" }

export const text = (t: string): Scripted => ({ kind: "reply", parts: [{ type: "text", text: t }] })

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly body: unknown
  /** Set when the client went away before the answer was complete. */
  aborted: boolean
}
