/** SKILL.md front matter, entry paths, finding the skills in a source, and the prompt's section. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { skillsSection } from "../../../src/domain/skills/prompt.ts"
import {
  entryPath,
  matches,
  MAX_DESCRIPTION_CHARS,
  MAX_SKILL_FILES,
  MAX_SKILL_MD_BYTES,
  packagesIn,
  parseSkillMd,
  searchWords,
  type SourceFile
} from "../../../src/domain/skills/skill.ts"

const md = (front: string, body = "Do the thing.") => `---\n${front}\n---\n${body}\n`
const reason = (text: string) => {
  const r = parseSkillMd(text, "x")
  return Result.isFailure(r) ? r.failure.reason : "ok"
}
const file = (path: string, text: string): SourceFile => ({ path, bytes: new TextEncoder().encode(text), executable: false })

describe("parseSkillMd", () => {
  it("reads name, description and the body after the front matter", () => {
    const r = parseSkillMd(md("name: pdf-tools\ndescription: >\n  Fill PDF forms\n  and extract text.\nlicense: MIT", "# PDF\n\nUse pdftotext."), "x")
    assert.deepStrictEqual(Result.isSuccess(r) ? r.success : undefined, { name: "pdf-tools", description: "Fill PDF forms and extract text.", body: "# PDF\n\nUse pdftotext." })
  })

  it("refuses missing or empty fields, a bad name, a huge file, missing front matter and bad YAML", () => {
    assert.include(reason(md("description: d")), "has no name")
    assert.include(reason(md("name: a")), "has no description")
    assert.include(reason(md("name: a\ndescription: '  '")), "description is empty")
    assert.include(reason(md(`name: a\ndescription: ${"d".repeat(MAX_DESCRIPTION_CHARS + 1)}`)), "longer than")
    assert.include(reason(md("name: 42\ndescription: d")), "must be strings")
    assert.include(reason(md("name: ../evil\ndescription: d")), "is not a skill name")
    assert.include(reason(md("name: a/b\ndescription: d")), "is not a skill name")
    assert.include(reason(md("name: PDF\ndescription: d")), "is not a skill name")
    assert.include(reason(md("name: -rf\ndescription: d")), "is not a skill name")
    assert.include(reason(md(`name: ${"a".repeat(65)}\ndescription: d`)), "longer than 64")
    assert.include(reason(md("name: a\ndescription: d", "x".repeat(MAX_SKILL_MD_BYTES))), "larger than")
    assert.include(reason("# no front matter\n"), "does not start with YAML front matter")
    assert.include(reason(md("name: [unclosed\ndescription: d")), "not valid YAML")
    assert.include(reason(md("- a\n- b")), "must be a mapping")
    assert.strictEqual(reason(md(`name: ${"a".repeat(64)}\ndescription: d`)), "ok")
  })
})

describe("entryPath", () => {
  const path = (raw: string) => {
    const r = entryPath(raw)
    return Result.isSuccess(r) ? r.success : `refused: ${r.failure.reason}`
  }
  it("normalises relative paths and refuses absolute ones, .. and odd characters", () => {
    assert.strictEqual(path("./a//b/"), "a/b")
    assert.strictEqual(path("./"), "")
    assert.include(path("/etc/passwd"), "absolute")
    assert.include(path("../evil"), "leads out")
    assert.include(path("a/../../evil"), "leads out")
    assert.include(path("a\\..\\b"), "backslash")
    assert.include(path("a\0b"), "NUL")
  })
})

describe("packagesIn", () => {
  it("finds one skill at the root, or several in folders (not inside another skill)", () =>
    Effect.gen(function*() {
      const root = yield* packagesIn([file("SKILL.md", md("name: one\ndescription: d")), file("ref/x.md", "x")], "src")
      assert.deepStrictEqual(root.map((p) => [p.name, p.folder, p.files.map((f) => f.path)]), [["one", "", ["SKILL.md", "ref/x.md"]]])
      const many = yield* packagesIn([
        file("skills/b/SKILL.md", md("name: bee\ndescription: d")),
        file("skills/b/inner/SKILL.md", md("name: inner\ndescription: d")),
        file("a/SKILL.md", md("name: ay\ndescription: d")),
        file("README.md", "hi")
      ], "src")
      assert.deepStrictEqual(many.map((p) => [p.name, p.folder, p.files.length]), [["ay", "a", 1], ["bee", "skills/b", 2]])
    }))

  it("refuses a source without a skill, two skills of one name, and a skill over the file limit", () =>
    Effect.gen(function*() {
      const why = (files: ReadonlyArray<SourceFile>) => packagesIn(files, "src").pipe(Effect.flip, Effect.map((e) => e.message))
      assert.include(yield* why([file("README.md", "x")]), "no SKILL.md found")
      assert.include(yield* why([file("a/SKILL.md", md("name: same\ndescription: d")), file("b/SKILL.md", md("name: same\ndescription: d"))]), "two skills")
      const many = Array.from({ length: MAX_SKILL_FILES }, (_, i) => file(`f${i}`, ""))
      assert.include(yield* why([file("SKILL.md", md("name: big\ndescription: d")), ...many]), `more than ${MAX_SKILL_FILES} files`)
      assert.include(yield* why([file("SKILL.md", "no front matter")]), "front matter")
    }))
})

describe("search and the prompt section", () => {
  it("matches every word, case-insensitively, over name and description", () => {
    const pdf = { name: "pdf-tools", description: "Fill PDF forms" }
    assert.isTrue(matches(pdf, searchWords("pdf FORMS")))
    assert.isFalse(matches(pdf, searchWords("pdf excel")))
  })

  it("lists skills as `- name: description` and tells the model to use them first; nothing when none", () => {
    assert.isUndefined(skillsSection([]))
    const text = skillsSection([{ name: "pdf", description: "Work with PDFs" }]) ?? ""
    assert.include(text, "# Skills")
    assert.include(text, "- pdf: Work with PDFs")
    assert.include(text, "action \"use\"")
  })
})
