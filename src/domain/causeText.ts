/**
 * A failure as one line for a log or an error message: the deepest message of a cause's first
 * failure (or defect), following `cause` links (a driver's error wrapped in ours), first line only.
 */
import { Cause } from "effect"

export const deepestReason = (cause: Cause.Cause<unknown>): string => {
  let e: unknown = cause.reasons.find(Cause.isFailReason)?.error ?? cause.reasons.find(Cause.isDieReason)?.defect
  let text = "no reason given"
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const m = e instanceof Error ? e.message : typeof e === "object" && "message" in e ? String(e.message) : String(e)
    if (m !== "") text = m.split("\n")[0] ?? m
    e = typeof e === "object" && "cause" in e ? e.cause : undefined
  }
  return text
}
