/** What channels hand the runtime (who wrote, where) and what they get back (a turn's events). */
import type { Tracer } from "effect"
import type { ContentBlock } from "../message.ts"
import type { StopReason, Usage } from "../model/types.ts"

/** A message's origin as a channel knows it. */
export interface ChatTarget {
  /** `cli`, `http`, `telegram`, … */
  readonly platform: string
  /** The sender's id on that platform. */
  readonly externalUserId: string
  readonly userName?: string | undefined
  /** The chat (a DM, a group, an HTTP session name); default "dm". */
  readonly chatId?: string | undefined
  readonly isGroup?: boolean | undefined
  /** Route to this agent (e.g. the HTTP channel's `model`) instead of the routing rules. */
  readonly agentId?: string | undefined
  /**
   * The anna user, when the channel already knows it (the HTTP channel authenticates a token);
   * otherwise the user is found or created from `platform` + `externalUserId`.
   */
  readonly userId?: string | undefined
  /**
   * On first contact (no user holds the identity yet), the identity goes to the existing user with
   * this id instead of a new user. The terminal passes the OS user name: the user NAME made for the
   * console and the person who runs `anna chat` as NAME are one user (issue 24).
   */
  readonly firstContactUser?: string | undefined
}

/** A message routed to an agent and a session (seed 001, "Multi-User Multi-Agent Routing"). */
export interface ResolvedChat {
  readonly userId: string
  readonly userName: string
  readonly agentId: string
  readonly platform: string
  readonly chatId: string
  readonly isGroup: boolean
  /** The context part of the session key; /new moves it on. */
  readonly context: string
  /** `{agentId}:{platform}:{userId}:{context}` */
  readonly sessionKey: string
  /** A model chosen with /model for this session ('' = the agent's). */
  readonly model: string
  /**
   * The incarnation of the user id (User.uid): a user removed and made again with the same id has
   * another, and nothing the runtime holds for the old one (a runner, its sandbox) serves the new one.
   */
  readonly userUid?: string | undefined
  /** This resolve gave the identity to the user `firstContactUser` names (the channel says so, once). */
  readonly claimedIdentity?: boolean | undefined
}

export type UserMessage = string | ReadonlyArray<ContentBlock>

/**
 * Why a turn could not be answered, in terms a client can act on (back off, shorten, retry later):
 * the HTTP channel turns it into a status code (429, 504, 400/413, 502/503). `errorOf` in
 * `failure.ts` derives it from our typed errors.
 */
export interface TurnError {
  readonly kind: "rate_limit" | "timeout" | "too_large" | "unavailable" | "auth" | "invalid"
  /** What the upstream asked for (rate limits), in whole seconds. */
  readonly retryAfterSeconds?: number | undefined
}

/** How a message is sent. */
export interface SendOptions {
  /**
   * The channel answers this message again after a crash. When the session's last stored message is
   * this same user message (the first attempt stored it and died before the model answered), it is
   * not stored a second time and the turn runs again. When the session already holds this message's
   * finished answer (the crash came while the reply was being delivered), that stored answer is
   * streamed again: the model is not asked, nothing is stored (src/layers/runtime/turn.ts).
   */
  readonly resumed?: boolean | undefined
  /**
   * The span the turn's span continues: an HTTP request's (itself continuing a caller's W3C
   * `traceparent`). Without one, the turn is a trace of its own (a platform's message, a job).
   */
  readonly parentSpan?: Tracer.AnySpan | undefined
  /**
   * The turn's id, the same for every delivery of one turn: a chat platform's message (its ledger
   * key), an HTTP request's Idempotency-Key, a scheduled job's run. On a cluster a turn whose id was
   * started before runs as `resumed` (issue 28); without an id, each send is a turn of its own.
   */
  readonly turnId?: string | undefined
}

/** One option of a command's picker (/model, /agent). */
export interface Choice {
  /** What the command takes to pick it (`/model VALUE`). */
  readonly value: string
  readonly label: string
  readonly current: boolean
}

/** What a command offers to pick from; a platform with a native picker shows it, the others show the numbered text. */
export interface Choices {
  readonly command: "model" | "agent"
  readonly options: ReadonlyArray<Choice>
}

/** What a turn streams back to the channel. */
export type TurnEvent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_start"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: "tool_end"; readonly id: string; readonly name: string; readonly output: string; readonly isError: boolean }
  /**
   * Something the user should know that is not the model's answer (compaction ran, sandbox down, …).
   * `status`: a line about what anna did (compaction ran) rather than about this answer; terminals and
   * chat platforms show it like any notice, the HTTP channel never puts it in the message content.
   */
  | { readonly type: "notice"; readonly text: string; readonly status?: boolean | undefined }
  /** A command's picker, after its text (channels without a picker ignore it: the text lists the same, numbered). */
  | { readonly type: "choices"; readonly choices: Choices }
  /**
   * The turn started over (issue 28: the cluster node answering it stopped mid-answer, and the
   * session's new owner runs it again, resumed): what came before is void, the events after it are
   * the whole answer. A channel that can rewrite what it showed does (a chat platform's message, the
   * web chat's bubble); one that cannot take it back ends the turn as unavailable (see restart.ts).
   */
  | { readonly type: "restart" }
  | {
    readonly type: "done"
    readonly stopReason: StopReason | "aborted" | "max_turns" | "command" | "unavailable"
    readonly usage: Usage
    readonly modelCalls: number
    readonly toolCalls: number
    /** With stopReason "unavailable": what failed, when known (see TurnError). */
    readonly error?: TurnError | undefined
  }

export const sessionKeyOf = (agentId: string, platform: string, userId: string, context: string): string =>
  `${agentId}:${platform}:${userId}:${context}`

/**
 * Marks the contexts `/new` starts (`dm#2`). A chat's first context is its own name, so no chat
 * name may contain the mark: otherwise chat "dm#2" would share a session with chat "dm" after /new.
 */
export const CONTEXT_MARK = "#"

/** Chat (session) names of the CLI and the HTTP channel are at most this long. */
export const MAX_CHAT_NAME = 128

/**
 * Why `name` cannot name a chat, or undefined when it can: it must not be empty, be longer than
 * MAX_CHAT_NAME, hold control characters (they reach terminals and logs) or CONTEXT_MARK.
 */
export const chatNameProblem = (name: string): string | undefined =>
  name.trim() === ""
    ? "a chat name must not be empty"
    : [...name].length > MAX_CHAT_NAME
    ? `a chat name has at most ${MAX_CHAT_NAME} characters`
    : /\p{Cc}/u.test(name)
    ? "a chat name must not contain control characters"
    : name.includes(CONTEXT_MARK)
    ? `a chat name must not contain "${CONTEXT_MARK}" (it marks the conversations /new starts)`
    : undefined
