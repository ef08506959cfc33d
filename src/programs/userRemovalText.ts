/** `anna user remove`'s report as text: what went, what was kept and under which id (UserRemovalReport). */
import type { UserRemovalReport } from "../services/UserRemoval.ts"

const plural = (n: number, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`

/** `a`, `a and b`, `a, b and c`. */
const listed = (parts: ReadonlyArray<string>): string =>
  parts.length <= 1 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1) ?? ""}`

const agentsText = (what: string, agents: ReadonlyArray<string>) =>
  `${what} ${agents.length === 1 ? "agent" : "agents"} ${agents.join(", ")}`

export const describeRemoval = (r: UserRemovalReport): string => {
  const gone = [
    plural(r.identities, "identity", "identities"),
    plural(r.tokens, "token"),
    plural(r.chatStates, "chat state"),
    ...(r.account ? ["the console account"] : []),
    `${plural(r.jobs.length, "scheduled job")}${r.jobs.length > 0 ? ` (${r.jobs.length === 1 ? "its" : "their"} run history stays)` : ""}`,
    ...(r.rules > 0 ? [plural(r.rules, "playbook rule")] : []),
    ...(r.skillStats > 0 ? [plural(r.skillStats, "skill record")] : []),
    ...(r.workspaces.length > 0 ? [agentsText("the workspace of", r.workspaces)] : []),
    ...(r.accessLists.length > 0 ? [agentsText("their place in the access list of", r.accessLists)] : [])
  ]
  const usage = `usage (${plural(r.usageRecords, "record")})`
  const kept = [
    ...(r.keptSessions.length > 0 ? [plural(r.keptSessions.length, "session")] : []),
    ...(r.profiles > 0 ? [plural(r.profiles, "profile")] : []),
    ...(r.diaryEntries > 0 ? [plural(r.diaryEntries, "diary entry", "diary entries")] : []),
    ...(r.usageRecords > 0 ? [`their ${usage}`] : []),
    ...(r.ruleVotes > 0 ? [`their ${plural(r.ruleVotes, "vote")} on shared rules`] : [])
  ]
  const sessions = r.sessions === "kept"
    ? kept.length === 0
      ? "They had no sessions, profiles, diary entries or usage to keep."
      : `Kept ${listed(kept)} as ${r.removedAs}, an id no user can be given (see: anna memory sessions --user ${r.removedAs}).`
    : `Deleted ${
      listed([
        `${plural(r.deletedSessions.length, "session")} (${r.deletedSessions.reduce((n, d) => n + d.messages, 0)} messages, ${
          r.deletedSessions.reduce((n, d) => n + d.summaries, 0)
        } summaries)`,
        plural(r.profiles, "profile"),
        plural(r.diaryEntries, "diary entry", "diary entries")
      ])
    } for good; their ${usage}${r.ruleVotes > 0 ? ` and ${plural(r.ruleVotes, "vote")} on shared rules` : ""} ${
      r.ruleVotes > 0 ? "are" : "is"
    } kept as ${r.removedAs}, an id no user can be given.`
  return [
    `${r.resumed ? "Finished removing" : "Removed"} user ${r.userId}: ${listed(gone)}.`,
    sessions,
    `A new user ${r.userId} would start with nothing of theirs.`
  ].join("\n")
}
