/**
 * Skills — the operator's skills: folders with a SKILL.md (src/domain/skills/skill.ts) installed
 * globally (`$ANNA_HOME/skills/<name>/`, every agent sees them) or for one agent
 * (`$ANNA_HOME/workspaces/<agent>/skills/<name>/`, the operator's folder, never mounted into a
 * sandbox). An agent's own skill shadows a global one of the same name.
 *
 * Owns installing (validate everything first, write into a temporary folder next to the target,
 * rename into place; replace only when asked), listing, removing, reading a skill's body, and the
 * cached list the system prompt shows (no file is read on a turn when nothing changed). Does not own
 * the skills a chat user installs in their own sandbox workspace: the `skills` tool handles those
 * through the sandbox's confined file access (src/layers/tools/skills.ts).
 *
 * Layers: `FsSkills.layer` (src/layers/skills/FsSkills.ts).
 */
import { Context, type Effect } from "effect"
import type { SkillError, SkillNotFound } from "../domain/skills/errors.ts"
import type { SkillMeta } from "../domain/skills/skill.ts"

export type OperatorScope = "global" | "agent"

export interface InstalledSkill extends SkillMeta {
  readonly scope: OperatorScope
  /** The agent whose skill it is (scope `agent`). */
  readonly agentId?: string | undefined
  /** Its folder on the host. */
  readonly path: string
}

export interface SkillContent {
  readonly skill: InstalledSkill
  readonly body: string
  /** The skill's other files, relative to its folder. */
  readonly files: ReadonlyArray<string>
}

export class Skills extends Context.Service<Skills, {
  /**
   * Installs every skill found in `source` — a local folder, a git URL (`https://…`, `git@…`,
   * `file://…`, `….git`; optional `#ref` and `#ref:folder`), or a `.tar`/`.tar.gz`/`.tgz` file or http(s) URL — globally
   * or for `agentId`. All or nothing: any refused entry or invalid skill installs none.
   */
  readonly install: (
    source: string,
    options: { readonly agentId?: string | undefined; readonly force: boolean }
  ) => Effect.Effect<ReadonlyArray<InstalledSkill>, SkillError>
  /** Global skills (no agent), or the skills `agentId` sees: its own, then the global ones it does not shadow. */
  readonly list: (agentId?: string) => Effect.Effect<ReadonlyArray<InstalledSkill>>
  /** Every installed skill: global ones and every agent's own. */
  readonly all: Effect.Effect<ReadonlyArray<InstalledSkill>>
  readonly remove: (name: string, agentId?: string) => Effect.Effect<InstalledSkill, SkillNotFound>
  /** The skill `agentId` sees under `name`, with its body. */
  readonly read: (name: string, agentId: string) => Effect.Effect<SkillContent, SkillError>
  /** What the system prompt lists for `agentId` (cached until a skills folder changes). */
  readonly forPrompt: (agentId: string) => Effect.Effect<ReadonlyArray<SkillMeta>>
}>()("anna/Skills") {}
