/**
 * The conversation's current tags, which playbook rules are matched against before a turn: the tags
 * of the session's latest diary entries, and the words of the user's message that are tags of some
 * rule (so a rule tagged `docker` is considered when the user writes "Docker"). Pure.
 */
import { normalTag } from "./rule.ts"

/** Tags of at most this many of the session's latest diary entries count. */
export const RECENT_ENTRIES_FOR_TAGS = 3

/** A message's words as tags could spell them (letters, digits, `-`, `_`, `+`, `#`, `.` inside). */
export const messageWords = (text: string): ReadonlySet<string> =>
  new Set(
    text.toLowerCase().split(/[^\p{L}\p{N}_+#.-]+/u).map((w) => w.replace(/^[.-]+|[.-]+$/g, "")).filter((w) => w !== "")
  )

export const conversationTags = (
  message: string,
  knownTags: ReadonlySet<string>,
  recentEntryTags: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const out = new Set(recentEntryTags.map(normalTag).filter((t) => t !== ""))
  for (const w of messageWords(message)) if (knownTags.has(w)) out.add(w)
  return [...out]
}
