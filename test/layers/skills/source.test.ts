/** When the `skills` tool is offered: the agent allows it, and there is a workspace or an operator skill. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SandboxFailure } from "../../../src/domain/sandbox/errors.ts"
import * as FsSkills from "../../../src/layers/skills/FsSkills.ts"
import { skillsSource } from "../../../src/layers/tools/skills.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import type { SandboxSession } from "../../../src/services/Sandbox.ts"
import type { ToolSession } from "../../../src/services/ToolCatalog.ts"
import { skillMd } from "./tarballs.ts"

const session = (sandbox: ToolSession["sandbox"], enabled = true): ToolSession => ({
  agentId: "a",
  userId: "u",
  sessionKey: "a:cli:u:dm",
  enabled: (n) => enabled || n !== "skills",
  sandbox
})
const noSandbox = Effect.fail(new SandboxFailure({ operation: "start", detail: "no Docker" }))

describe("the skills tool source", () => {
  it.effect("offers the tools with a workspace or operator skills (create_skill only with a workspace), not without both, each by its own name", () =>
    Effect.gen(function*() {
      const home = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-skills-src-"))),
        (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
      )
      const source = skillsSource(yield* FsSkills.make.pipe(Effect.provide(AppConfig.at(home))))
      const names = (s: ToolSession) => source.tools(s).pipe(Effect.map((t) => t.map((x) => x.definition.name)))
      assert.deepStrictEqual(yield* names(session(noSandbox)), [])
      assert.deepStrictEqual(yield* names(session(Effect.succeed({} as SandboxSession))), ["skills", "search_skills", "create_skill"])
      mkdirSync(join(home, "skills", "pdf"), { recursive: true })
      writeFileSync(join(home, "skills", "pdf", "SKILL.md"), skillMd("pdf"))
      assert.deepStrictEqual(yield* names(session(noSandbox)), ["skills", "search_skills"])
      // Each tool is switched by its own name: without "skills", search_skills stays.
      assert.deepStrictEqual(yield* names(session(noSandbox, false)), ["search_skills"])
    }))
})
