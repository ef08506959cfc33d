/**
 * The `bash` tool: one shell command in the session's container via `session.exec`. The result is
 * plain text for the model: the exit code, then stdout and stderr in separate labelled sections,
 * each kept to a shared character budget (head and tail around an omission marker, because errors
 * usually come last), plus what the sandbox itself dropped past its per-stream byte cap.
 */
import { Effect, Schema } from "effect"
import { posix } from "node:path"
import { DEFAULT_EXEC_TIMEOUT_MS, type ExecResult } from "../../domain/sandbox/types.ts"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { advertisedMaximum, inputSchemaOf } from "../../domain/toolSchema.ts"
import type { SandboxSession } from "../../services/Sandbox.ts"
import { decodeInput } from "./files.ts"
import { formatCount, shareBudget, truncateMiddle } from "../../domain/text.ts"

export const TOOL_NAME = "bash"
/** Characters of stdout + stderr returned to the model; the rest is elided in the middle. */
export const OUTPUT_BUDGET = 30_000
export const MAX_TIMEOUT_SECONDS = 600
export const DEFAULT_TIMEOUT_SECONDS = DEFAULT_EXEC_TIMEOUT_MS / 1000

/**
 * `timeout_seconds` above the maximum is clamped, not refused: the model is told the maximum, and a
 * longer request still runs, for as long as allowed.
 */
export const Input = Schema.Struct({
  command: Schema.String.check(Schema.isNonEmpty()).annotate({ description: "The command, run with /bin/sh -c in the sandbox." }),
  timeout_seconds: Schema.optionalKey(
    Schema.Finite.check(Schema.isGreaterThan(0), advertisedMaximum(MAX_TIMEOUT_SECONDS)).annotate({
      description: `Seconds before the command and everything it started are killed (default ${DEFAULT_TIMEOUT_SECONDS}, at most ${MAX_TIMEOUT_SECONDS}).`
    })
  ),
  cwd: Schema.optionalKey(
    Schema.String.annotate({ description: "Working directory inside /workspace (default: the session's working directory)." })
  )
})

export const inputSchema = inputSchemaOf(Input)

const seconds = (s: number) => formatCount(Math.round(s * 1000) / 1000)

const section = (label: string, text: string, budget: number, dropped: number): string => {
  const kept = truncateMiddle(text, budget)
  const lost = dropped > 0
    ? `${kept === "" || kept.endsWith("\n") ? "" : "\n"}[… a further ${formatCount(dropped)} bytes of ${label} were not captured (sandbox output limit) …]\n`
    : ""
  return `--- ${label} ---\n${kept}${lost}`
}

/** The model's view of a finished command. */
export const formatResult = (result: ExecResult, timeoutSeconds: number, budget: number = OUTPUT_BUDGET): string => {
  const lines: Array<string> = []
  if (result.timedOut) lines.push(`[timed out after ${seconds(timeoutSeconds)} s; the command and its children were killed]`)
  lines.push(`exit code: ${result.exitCode}`)
  const [outBudget, errBudget] = shareBudget(result.stdout.length, result.stderr.length, budget)
  const hasOut = result.stdout !== "" || result.stdoutDropped > 0
  const hasErr = result.stderr !== "" || result.stderrDropped > 0
  if (hasOut) lines.push(section("stdout", result.stdout, outBudget, result.stdoutDropped))
  if (hasErr) lines.push(section("stderr", result.stderr, errBudget, result.stderrDropped))
  if (!hasOut && !hasErr) lines.push("(no output)")
  return lines.map((l) => (l.endsWith("\n") ? l.slice(0, -1) : l)).join("\n")
}

export const make = (session: SandboxSession): Tool => {
  const decode = decodeInput(TOOL_NAME, Input)

  /** The container path for `cwd`, after checking that it is a folder inside the workspace. */
  const workingDirectory = Effect.fn("BashTool.workingDirectory")(function*(cwd: string) {
    const found = yield* session.readFile(cwd, { maxBytes: 0, maxEntries: 0 }).pipe(
      Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.kind === "outside" ? e.reason : `cwd ${cwd}: ${e.kind === "missing" ? "no such file or directory" : e.reason}` }))
    )
    if (found._tag !== "Directory") return yield* new ToolError({ tool: TOOL_NAME, reason: `cwd ${cwd} is not a directory` })
    return posix.resolve(yield* session.workingDir, cwd)
  })

  const execute = Effect.fn("BashTool.execute")(function*(raw: unknown, _context: ToolCallContext) {
    const input = yield* decode(raw)
    const timeoutSeconds = Math.min(MAX_TIMEOUT_SECONDS, input.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS)
    const cwd = input.cwd === undefined ? undefined : yield* workingDirectory(input.cwd)
    const result = yield* session.exec(input.command, { cwd, timeoutMs: Math.round(timeoutSeconds * 1000) }).pipe(
      Effect.mapError((e) => new ToolError({ tool: TOOL_NAME, reason: e.message }))
    )
    return formatResult(result, timeoutSeconds)
  })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Run a shell command in your sandbox (a Linux container; your workspace is /workspace).",
        "Returns the exit code, stdout and stderr. Long output keeps its beginning and end.",
        `Commands are killed after timeout_seconds (default ${DEFAULT_TIMEOUT_SECONDS}). Prefer read/write/edit for files.`
      ].join(" "),
      inputSchema
    },
    execute
  }
}
