/**
 * Node's process warnings (DeprecationWarning, ExperimentalWarning, MaxListenersExceededWarning, …)
 * as anna's own log lines. Installed first thing by start.ts, so it stays free of Effect.
 *
 * Node prints a warning itself, wherever the cursor is (over `anna chat`'s prompt, inside a tool
 * line), on two lines the first time ("(node:PID) [DEP0040] DeprecationWarning: …" then "(Use `node
 * --trace-deprecation ...` …)"). Deprecated Node APIs that only anna's dependencies call are not
 * the user's to act on: the `punycode` module and `url.parse()` (node-fetch and whatwg-url, under
 * grammy), `Buffer()`; Node stays quiet about them inside node_modules, but a dependency bundled into
 * dist/chunks no longer is, and `--pending-deprecation` reports them anywhere. Node 22's
 * "SQLite is an experimental feature" is about the store anna chose on purpose. So:
 *
 * - those (THIRD_PARTY) become one debug line each (`ANNA_LOG_LEVEL=debug` shows them);
 * - any other warning becomes one warn line, once per text (Node repeats some, e.g. per emitter).
 *
 * They go through the logger the CLI installs (src/programs/logging.ts attaches it), so they land
 * where every log line does: stderr, or above the prompt of `anna chat`. One that comes before the
 * logger is ready waits for it, and if it never is, a warn-level one is printed as one line at exit.
 *
 * Node's own printing is kept when the user asked for stack traces (`--trace-warnings`,
 * `--trace-deprecation`); with `--no-warnings` Node adds no printer, and neither does this.
 */

export interface ProcessWarning {
  readonly level: "Debug" | "Warn"
  /** One line, e.g. "DeprecationWarning [DEP0040]: The `punycode` module is deprecated. …". */
  readonly text: string
}

/** Deprecations of Node APIs that anna does not call, only code it depends on. */
const THIRD_PARTY_CODES: ReadonlySet<string> = new Set([
  "DEP0005", // Buffer() without `new` or Buffer.from
  "DEP0040", // the punycode module
  "DEP0169" // url.parse()
])

const codeOf = (w: Error): string | undefined => {
  const code: unknown = (w as Error & { readonly code?: unknown }).code
  return typeof code === "string" ? code : undefined
}

export const isThirdParty = (w: Error): boolean => {
  const code = codeOf(w)
  return (code !== undefined && THIRD_PARTY_CODES.has(code)) || (w.name === "ExperimentalWarning" && /\bSQLite\b/.test(w.message))
}

/** A warning on one line: its name, its code, its message with line breaks folded. */
export const warningLine = (w: Error): string => {
  const code = codeOf(w)
  return `${w.name}${code === undefined ? "" : ` [${code}]`}: ${w.message.replace(/\s*\n\s*/g, " ").trim()}`
}

let sink: ((w: ProcessWarning) => void) | undefined
const waiting: Array<ProcessWarning> = []
const seen = new Set<string>()

const onWarning = (w: Error): void => {
  const text = warningLine(w)
  if (seen.has(text)) return
  seen.add(text)
  const routed: ProcessWarning = { level: isThirdParty(w) ? "Debug" : "Warn", text }
  if (sink === undefined) waiting.push(routed)
  else sink(routed)
}

let installed = false

/** Replaces Node's printing of process warnings with the routing above (once per process). */
export const routeWarnings = (): void => {
  if (installed) return
  installed = true
  // No printer: the user silenced warnings (--no-warnings, NODE_NO_WARNINGS=1).
  if (process.listenerCount("warning") === 0) return
  if (process.traceProcessWarnings || process.traceDeprecation) return
  process.removeAllListeners("warning")
  process.on("warning", onWarning)
  process.once("exit", () => {
    for (const w of waiting.splice(0)) if (w.level === "Warn") process.stderr.write(`anna: ${w.text}\n`)
  })
}

/** Hands the warnings to `log`: those that came already, then each new one. */
export const attachWarnings = (log: (w: ProcessWarning) => void): void => {
  sink = log
  for (const w of waiting.splice(0)) log(w)
}
