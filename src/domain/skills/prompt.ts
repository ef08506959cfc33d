/** The system prompt's section on installed skills (pure). */
import type { SkillMeta } from "./skill.ts"

/** At most this many skills are listed in the prompt (the `skills` tool lists and searches them all). */
export const MAX_PROMPT_SKILLS = 100

/** `# Skills` with one `- name: description` line each, or undefined when there are none. */
export const skillsSection = (skills: ReadonlyArray<SkillMeta>): string | undefined => {
  if (skills.length === 0) return undefined
  const shown = skills.slice(0, MAX_PROMPT_SKILLS)
  const more = skills.length - shown.length
  return [
    "# Skills",
    "Installed skills (instructions for particular tasks). Before following one, call the skills tool with action \"use\" and its name to read its instructions.",
    ...shown.map((s) => `- ${s.name}: ${s.description}`),
    ...(more > 0 ? [`(${more} more: call the skills tool with action "list" or "search")`] : [])
  ].join("\n")
}
