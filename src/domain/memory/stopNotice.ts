/**
 * What to tell a person whose compaction a limit stopped: which limit, and how to go on (issue 24).
 * Pure text from the report; `anna memory compact` prints it on stderr and puts it in `--json`.
 * Stops that are not a limit (below threshold, nothing left, no progress) need no notice.
 */
import { type CompactionReport, MAX_FULL_ITERATIONS, type SpendGuardStop } from "./types.ts"

const minutes = (seconds: number): string => {
  const m = Math.round(seconds / 60)
  return m === 1 ? "1 minute" : `${m} minutes`
}

const guardNotice = (g: SpendGuardStop, sessionKey: string): string => {
  const used = `${g.calls} summarizer calls for ${sessionKey} in the last ${minutes(g.windowSeconds)}`
  const kept = "What was compacted is kept."
  const thisRun = `anna memory compact ${sessionKey} --max-summary-calls N`
  switch (g.setBy) {
    case "run":
      return `Stopped by --max-summary-calls ${g.limit}: ${used} (earlier runs in that window count too). ${kept} To go on, run again with a larger --max-summary-calls.`
    case "agent":
      return `Stopped by agent ${g.agentId}'s spend guard (--summary-max-calls ${g.limit}): ${used}. ${kept} To go on: ${thisRun} for this run, anna agent set ${g.agentId} --summary-max-calls N for good, or wait for the window to pass.`
    case "default":
      return `Stopped by the default spend guard (${g.limit} calls): ${used}. ${kept} To go on: ${thisRun}, or wait for the window to pass.`
  }
}

/** The notice for a run a limit stopped, or undefined when no limit did. */
export const compactionStopNotice = (report: CompactionReport, sessionKey: string): string | undefined => {
  switch (report.stopReason) {
    case "spend_guard":
      return report.spendGuard === undefined
        ? `Stopped by the summarizer's spend guard. What was compacted is kept; to go on: anna memory compact ${sessionKey} --max-summary-calls N.`
        : guardNotice(report.spendGuard, sessionKey)
    case "max_iterations":
      return `Stopped after ${MAX_FULL_ITERATIONS} iterations, the bound of one --full run, with more left to compact. Run it again to go on.`
    case "call_limit":
      return `Stopped at this run's cap on summarizer calls; the rest waits for the next compaction.`
    default:
      return undefined
  }
}
