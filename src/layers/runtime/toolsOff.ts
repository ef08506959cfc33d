/**
 * Telling people that a conversation's sandboxed tools are off (issue 24): the end user gets one
 * short neutral line, once per conversation — remembered in the session's metadata, so a new runner
 * (another `anna chat -p` process, a gateway restart, a runner reaped for idleness) does not say it
 * again — while the operator's explanation and fix (which may name commands, packages, paths) go to
 * a WARN log line; `anna doctor` says the same. End users cannot act on the fix, and it is not
 * theirs to read.
 */
import { Clock, Effect, Option } from "effect"
import { SessionManager } from "../../services/SessionManager.ts"

export const TOOLS_OFF_NOTICE = "Tools are unavailable right now; the operator has been told."

/** The session metadata key that records when the user was told (ms). */
const TOLD_KEY = "toolsOffToldAt"

/** `text` ending as a sentence does. */
const sentence = (text: string): string => (/[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`)

export const make = Effect.gen(function*() {
  const sessions = yield* Effect.serviceOption(SessionManager)

  /** Whether the conversation's user was told already (a session not stored yet was not). */
  const toldBefore = (sessionKey: string): Effect.Effect<boolean> =>
    Option.isNone(sessions)
      ? Effect.succeed(false)
      : sessions.value.loadInfo(sessionKey).pipe(
        Effect.map((s) => typeof s.info[TOLD_KEY] === "number"),
        Effect.orElseSucceed(() => false)
      )

  return {
    /** The operator's line, for the log: what is wrong and where the fix is. */
    logProblem: (sessionKey: string, agentId: string, problem: string) =>
      Effect.logWarning(
        `tools are off in session ${sessionKey} (agent ${agentId}): ${sentence(problem)} Its users were told only that tools are unavailable; \`anna doctor\` checks the sandbox.`
      ),
    /** Whether to tell the user now: not when this conversation was told before. */
    shouldTell: (sessionKey: string) => Effect.map(toldBefore(sessionKey), (told) => !told),
    /** Records that the user was told (after the turn, when the session is stored; best effort). */
    remember: (sessionKey: string): Effect.Effect<void> =>
      Option.isNone(sessions)
        ? Effect.void
        : Effect.flatMap(Clock.currentTimeMillis, (now) => sessions.value.saveInfo(sessionKey, { [TOLD_KEY]: now })).pipe(Effect.ignore)
  }
})
