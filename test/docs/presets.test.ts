/**
 * README documents the preset file format of the `agent` tool (issue 24: it was written down only in
 * src/layers/runtime/presets.ts): the example under "Sub-agent presets" is a file the real parser
 * reads as the README says, every key set, and the limits it states are the code's.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { DEFAULT_MAX_TURNS, DEFAULT_TIMEOUT_SECONDS } from "../../src/layers/runtime/agentTool.ts"
import { MAX_CHILD_TIMEOUT_SECONDS, MAX_CHILD_TURNS, MAX_PRESET_BYTES, MAX_PRESET_FILES, parsePreset } from "../../src/layers/runtime/presets.ts"

const README = readFileSync(resolve(import.meta.dirname, "../../README.md"), "utf8")

const section = (): string => {
  const start = README.indexOf("### Sub-agent presets")
  assert.isAtLeast(start, 0, "README has a Sub-agent presets section")
  return README.slice(start, README.indexOf("\n### ", start + 1))
}

describe("README: the preset file format", () => {
  it("its example is a preset the parser reads as documented, with every key set", () => {
    const text = section()
    const example = /```markdown\n([\s\S]*?)```/.exec(text)?.[1] ?? ""
    const parsed = parsePreset("reviewer", example)
    assert.strictEqual(parsed._tag, "Success", parsed._tag === "Failure" ? parsed.failure : "")
    if (parsed._tag !== "Success") return
    assert.deepStrictEqual(parsed.success, {
      name: "reviewer",
      description: "Reviews a diff for bugs",
      model: "gpt-4.1-mini",
      tools: ["read", "bash"],
      maxTurns: 6,
      timeoutSeconds: 300,
      system: "You are a careful code reviewer. Report each bug with its file and line."
    })
  })

  it("states the code's defaults and limits", () => {
    const text = section().replace(/\s+/g, " ")
    assert.include(text, `1–${MAX_CHILD_TURNS}; default ${DEFAULT_MAX_TURNS}`)
    assert.include(text, `1–${MAX_CHILD_TIMEOUT_SECONDS} seconds; default ${DEFAULT_TIMEOUT_SECONDS}`)
    assert.include(text, `over ${MAX_PRESET_BYTES / 1024} KiB`)
    assert.include(text, `At most ${MAX_PRESET_FILES} files`)
  })
})
