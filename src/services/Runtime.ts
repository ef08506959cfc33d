/**
 * Runtime — what every channel talks to: routes a message to a user, an agent and a session (seed
 * 001), runs the turn (compaction when needed, the model's tool loop, the sandboxed tools) and
 * streams its events back; slash commands (/new, /compact, /abort, /whoami, /model, /agent) are
 * answered here too, the same for every channel. Turns on one session never interleave.
 *
 * Layers: `Runtime.layer` (src/layers/runtime/Runtime.ts), over the SessionPool.
 */
import { Context, type Effect, type Stream } from "effect"
import type { StorageError } from "../domain/storage/errors.ts"
import type { AccessDenied, NoAgent } from "../domain/runtime/errors.ts"
import type { ChatTarget, ResolvedChat, SendOptions, TurnEvent, UserMessage } from "../domain/runtime/types.ts"

export class Runtime extends Context.Service<Runtime, {
  readonly resolve: (target: ChatTarget) => Effect.Effect<ResolvedChat, NoAgent | AccessDenied | StorageError>
  /**
   * One message: a slash command, or a turn of the agent. Failures that the user should read
   * (no model, sandbox down, provider errors) come as `notice` events followed by `done`, not as
   * stream errors, so every channel shows them the same way.
   */
  readonly send: (chat: ResolvedChat, message: UserMessage, options?: SendOptions) => Stream.Stream<TurnEvent>
  /** Interrupts the session's running turn; false when none was running. */
  readonly abort: (chat: ResolvedChat) => Effect.Effect<boolean>
}>()("anna/Runtime") {}
