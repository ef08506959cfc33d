/** The heartbeat (placeholder until written). */
import { Effect } from "effect"
import type { Notifier } from "../../services/Notifier.ts"

export const start = (_notifier: Notifier["Service"] | undefined) => Effect.void
