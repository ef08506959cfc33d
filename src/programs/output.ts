/** Printing for the CLI: JSON for `--json`, aligned tables and progress lines for people. */
import { Console, Effect } from "effect"
import { CliError } from "effect/cli"

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/**
 * A usage error found by a command's handler (flags that only make sense together, say): reported
 * like a parse error — the message, the command's usage and where to read more, on stderr — and
 * exit code 2. `path` is the command's, e.g. ["anna", "sandbox", "build-image"].
 */
export const usageError = (path: ReadonlyArray<string>, message: string) =>
  Effect.fail(new CliError.ShowHelp({ commandPath: path, errors: [new CliError.ValidationError({ message })] }))

/**
 * For `Effect.catchTag("InvalidConfig", usageOf(path))` around a check (or a store call) whose only
 * InvalidConfig is a value that cannot be used as given — out of range, malformed, contradicting
 * another flag: that is a usage error of the command (exit 2), like a flag effect/cli refuses.
 * Refusals that depend on what is stored (an unknown id, one that exists) stay exit 1.
 */
export const usageOf = (path: ReadonlyArray<string>) => (e: { readonly reason: string }) => usageError(path, e.reason)

export const iso = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")

/** Columns padded to their widest cell; the last column is not padded. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const all = [header, ...rows]
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)))
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ")).join("\n")
}


/**
 * Progress on stderr: a rewritten line on a terminal, otherwise a line every 10 %. Returns an
 * updater and a finisher.
 */
export const progress = (label: string, total: number) => {
  const tty = process.stderr.isTTY === true
  let lastDecile = -1
  let lastDraw = 0
  const update = (done: number) =>
    Effect.sync(() => {
      const pct = total === 0 ? 100 : Math.floor((done / total) * 100)
      if (tty) {
        const now = Date.now()
        if (now - lastDraw < 100 && done < total) return
        lastDraw = now
        process.stderr.write(`\r${label}: ${done}/${total} (${pct}%)`)
      } else if (Math.floor(pct / 10) > lastDecile) {
        lastDecile = Math.floor(pct / 10)
        process.stderr.write(`${label}: ${done}/${total} (${pct}%)\n`)
      }
    })
  const finish = Effect.sync(() => {
    if (tty) process.stderr.write("\n")
  })
  return { update, finish }
}
