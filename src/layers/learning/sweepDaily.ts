/**
 * The playbook's periodic maintenance (issue 15, the design's `Confidence.sweep`): while the gateway
 * runs, every agent's playbook and the global one are swept at start and then once a day — maturities
 * settled against the decayed confidence, demotion and removal candidates flagged (logged for the
 * operator, who removes rules with `anna playbook remove`). A sweep writes a file only when a maturity
 * moved, and a second sweep the same day changes nothing. An unreadable file is logged and skipped.
 */
import { Duration, Effect } from "effect"
import type { SweepReport } from "../../domain/learning/confidence.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { Playbook } from "../../services/Playbook.ts"

/** How often the playbooks are swept. */
export const SWEEP_EVERY = Duration.days(1)

const describe = (where: string, r: SweepReport) =>
  `learning: swept ${where}: ${r.promoted} promoted, ${r.demoted} demoted, ${r.flagged} flagged` +
  (r.removalCandidates.length > 0 ? ` (removal candidates: ${r.removalCandidates.join(", ")})` : "")

/** One sweep of the global playbook and every agent's; returns the reports that changed or flagged something. */
export const sweepAll = Effect.fn("Learning.sweepAll")(function*() {
  const playbook = yield* Playbook
  const agents = yield* (yield* AgentStore).list
  const targets: ReadonlyArray<readonly [string, string | undefined]> = [
    ["the global playbook", undefined],
    ...agents.map((a) => [`agent ${a.id}'s playbook`, a.id] as const)
  ]
  const notable: Array<string> = []
  for (const [where, agentId] of targets) {
    const report = yield* playbook.sweep(agentId).pipe(
      Effect.catch((e) => Effect.as(Effect.logWarning(`learning: ${where} not swept: ${e.message}`), undefined))
    )
    if (report !== undefined && report.promoted + report.demoted + report.flagged > 0) notable.push(describe(where, report))
  }
  for (const line of notable) yield* Effect.logInfo(line)
  return notable
})

/** Sweeps now and then every SWEEP_EVERY, forever, telling `swept` after each sweep (tests wait on it). */
export const sweepLoop = (swept: (notable: ReadonlyArray<string>) => Effect.Effect<void>) =>
  sweepAll().pipe(
    Effect.catchCause((c) => Effect.as(Effect.logWarning("learning: playbook sweep failed", c), [] as ReadonlyArray<string>)),
    Effect.flatMap(swept),
    Effect.andThen(Effect.sleep(SWEEP_EVERY)),
    Effect.forever
  )

/** The gateway's loop (fork it in the gateway's scope). */
export const sweepDaily = sweepLoop(() => Effect.void)
