/**
 * Live containers counted against the caps (settings `sandbox.max_per_user`, `sandbox.max_total`).
 * The caps are read afresh when a container is admitted and at every command, so a changed setting
 * applies from the next tool call: raised, a conversation that was refused gets its container;
 * lowered, the calling user's (for the total: anyone's) least recently used idle containers beyond
 * the cap are removed — their workspaces stay, the next command there starts a container again if
 * the cap allows — and when that is not enough (the others are busy), the calling conversation's own
 * container goes and its command is refused.
 *
 * Everything here is synchronous between yields, so a check and the count it guards are one step.
 * The count is the gauge `anna_sandbox_containers`, set as it changes.
 *
 * This in-memory count is one process's. A node of a cluster (issue 28) counts every node's live
 * containers in PostgreSQL instead (./clusterAdmission.ts), provided as `SandboxAdmission`.
 */
import { Context, Effect } from "effect"
import * as Metrics from "../../domain/observability/metrics.ts"
import { type SandboxFailure, SandboxLimitReached } from "../../domain/sandbox/errors.ts"
import type { SandboxCaps } from "../../domain/sandbox/types.ts"

/** One live container. */
export interface Slot {
  /** Unique to this container (a shared count's row). */
  readonly id: string
  /** Its workspace folder, when known (shown with a shared count's row). */
  readonly workspace?: string | undefined
  /** Whose it is; '' = nobody in particular (CLI, tests): counted in the total only. */
  readonly userId: string
  lastUsed: number
  /** Commands and processes running in it now. */
  busy: number
  /** Removes the container if it is still idle (the session may start another later): whether it did. */
  readonly evict: Effect.Effect<boolean>
}

export interface Admission {
  /** Counts `slot` in, or fails when a cap is reached (or, for a shared count, when it cannot be read). */
  readonly admit: (slot: Slot, caps: SandboxCaps) => Effect.Effect<void, SandboxLimitReached | SandboxFailure>
  readonly release: (slot: Slot) => Effect.Effect<void>
  /** Brings the counts within `caps` for `self`'s next command; fails (and `self` must go) when it cannot. */
  readonly enforce: (self: Slot, caps: SandboxCaps) => Effect.Effect<void, SandboxLimitReached>
  readonly live: Effect.Effect<number>
}

/**
 * The admission the Docker sandbox counts with; unset (one gateway), each sandbox makes its own
 * in-memory one (`make`).
 */
export const SandboxAdmission = Context.Reference<Admission | undefined>("anna/sandbox/Admission", { defaultValue: () => undefined })

/** Live containers counted against the caps: in all, and of the calling user. */
export interface Counts {
  readonly total: number
  readonly mine: number
}

/**
 * The idle containers among `slots` to remove, least recently used first, so that `self` fits under
 * `caps` given the `counts` (this process's, or a cluster's: clusterAdmission.ts): the user's own
 * first for the per-user cap, then anyone's for the total.
 */
export const victimsAmong = (slots: Iterable<Slot>, self: Slot, caps: SandboxCaps, counts: Counts): ReadonlyArray<Slot> => {
  const idle = [...slots].filter((s) => s !== self && s.busy === 0).sort((a, b) => a.lastUsed - b.lastUsed)
  const chosen = new Set<Slot>()
  if (self.userId !== "") {
    let excess = counts.mine - caps.perUser
    for (const s of idle) {
      if (excess <= 0) break
      if (s.userId !== self.userId) continue
      chosen.add(s)
      excess--
    }
  }
  let excess = counts.total - chosen.size - caps.total
  for (const s of idle) {
    if (excess <= 0) break
    if (chosen.has(s)) continue
    chosen.add(s)
    excess--
  }
  return [...chosen]
}

export const make = (): Admission => {
  const slots = new Set<Slot>()
  const countOf = (userId: string) => {
    let n = 0
    for (const s of slots) if (s.userId === userId) n++
    return n
  }
  /** Which cap `self` is beyond now (counting itself if it holds a slot). */
  const beyond = (self: Slot, caps: SandboxCaps, joining: boolean): SandboxLimitReached | undefined => {
    const extra = joining ? 1 : 0
    if (slots.size + extra > caps.total) return new SandboxLimitReached({ scope: "total", limit: caps.total })
    if (self.userId !== "" && countOf(self.userId) + extra > caps.perUser) return new SandboxLimitReached({ scope: "user", limit: caps.perUser })
    return undefined
  }

  const victims = (self: Slot, caps: SandboxCaps) => victimsAmong(slots, self, caps, { total: slots.size, mine: countOf(self.userId) })

  return {
    admit: (slot, caps) =>
      Effect.suspend(() => {
        const over = beyond(slot, caps, true)
        if (over !== undefined) return Effect.fail(over)
        slots.add(slot)
        return Metrics.sandboxLive(slots.size)
      }),
    release: (slot) =>
      Effect.suspend(() => {
        slots.delete(slot)
        return Metrics.sandboxLive(slots.size)
      }),
    enforce: (self, caps) =>
      Effect.gen(function*() {
        if (beyond(self, caps, false) === undefined) return
        for (const v of victims(self, caps)) {
          const removed = yield* v.evict
          if (removed) yield* Effect.logInfo(`sandbox: removed an idle container of ${v.userId || "the CLI"} (the live-container cap was lowered)`)
        }
        const over = beyond(self, caps, false)
        if (over !== undefined) return yield* over
      }),
    live: Effect.sync(() => slots.size)
  }
}
