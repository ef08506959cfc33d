/**
 * The three-layer system prompt (seed 000, "3-Layer System Prompt"): basic instructions (SYSTEM.md
 * in the agent's workspace, else built in), the agent's soul (SOUL.md, else the agent's system prompt
 * setting), and the per-user notes of the ProfileStore; then the installed skills, when there are
 * any; last, the playbook rules that fit this turn (issue 15, src/domain/learning/context.ts), when
 * any were chosen. Pure: the caller reads the files.
 */
import type { SkillMeta } from "../skills/skill.ts"
import { skillsSection } from "../skills/prompt.ts"

export const BASIC_INSTRUCTIONS = [
  "You are an AI assistant that runs inside anna, a self-hosted gateway, for the user you are talking with.",
  "Your conversation memory is lossless: older parts of this conversation may appear as <memory-summary> blocks. When you need details they leave out, use the memory tool (search, describe, expand) instead of guessing.",
  "Keep durable notes about the user (preferences, facts they want remembered) with the memory tool's profile_update action.",
  "Tools such as bash, read, write and edit act in your sandboxed workspace at /workspace; nothing else on the machine is reachable.",
  "Be concise and accurate. If a tool fails, say so and try another way."
].join("\n")

export interface PromptParts {
  readonly systemMd?: string | undefined
  readonly soulMd?: string | undefined
  readonly agentPrompt: string
  readonly profile: string
  readonly userName: string
  readonly now: Date
  /** The operator's skills this agent has (a `# Skills` section when there are any). */
  readonly skills?: ReadonlyArray<SkillMeta> | undefined
  /** The playbook section for this turn ("## Relevant Guidelines" / "## Patterns to Avoid"), or "". */
  readonly guidelines?: string | undefined
}

export const systemPrompt = (p: PromptParts): string => {
  const basic = p.systemMd?.trim() || BASIC_INSTRUCTIONS
  const soul = p.soulMd?.trim() || p.agentPrompt.trim()
  const sections = [basic]
  if (soul !== "") sections.push(`# Who you are\n${soul}`)
  sections.push(
    `# The user\nName: ${p.userName || "unknown"}. Current time: ${p.now.toISOString().slice(0, 16).replace("T", " ")} UTC.` +
      (p.profile.trim() === "" ? "\nYou have no notes about this user yet." : `\nYour notes about this user:\n${p.profile.trim()}`)
  )
  const skills = skillsSection(p.skills ?? [])
  if (skills !== undefined) sections.push(skills)
  const guidelines = p.guidelines?.trim() ?? ""
  if (guidelines !== "") sections.push(guidelines)
  return sections.join("\n\n")
}
