/** Scheduler failures a caller can act on (a bad schedule, an unknown job, a limit reached). */
import { Schema } from "effect"

/** A schedule, a prompt or a delivery target that cannot be stored; `reason` says why, in one line. */
export class InvalidSchedule extends Schema.TaggedError<InvalidSchedule>()("InvalidSchedule", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

export class JobNotFound extends Schema.TaggedError<JobNotFound>()("JobNotFound", {
  id: Schema.String
}) {
  override get message() {
    return `no scheduled job "${this.id}" (see: anna schedule list)`
  }
}
