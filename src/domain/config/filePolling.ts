/**
 * How the operator's files on disk — agents' SYSTEM.md, SOUL.md and presets, skills folders — are
 * noticed when they change. Unset (one gateway): inotify watches, so a turn reads no file until one
 * changes. Set (a cluster, issue 28: `$ANNA_HOME/workspaces` is then a shared volume, where a watch
 * does not see another machine's writes): no watches; what was read is kept this many milliseconds,
 * then read again.
 */
import { Context } from "effect"

export const PollFiles = Context.Reference<number | undefined>("anna/PollFiles", { defaultValue: () => undefined })

/** The interval a cluster's nodes poll at. */
export const CLUSTER_POLL_MS = 2_000
