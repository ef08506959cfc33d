/**
 * The guard in front of the end-to-end tests (test/support/builtEntry.ts): they run the built
 * dist/main.js, so a missing build, or one older than a source file or the bundling script, stops
 * them with what to run instead of testing old code. Times are set explicitly (no waiting).
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { staleBuild } from "./builtEntry.ts"

const roots: Array<string> = []
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})

/** A package with src/a/b.ts, scripts/bundle.mjs and a README under src/, all at time `t`. */
const project = (t: number) => {
  const root = mkdtempSync(join(tmpdir(), "anna-built-"))
  roots.push(root)
  for (const dir of ["src/a", "scripts", "dist"]) mkdirSync(join(root, dir), { recursive: true })
  for (const file of ["src/a/b.ts", "src/main.ts", "src/a/README.md", "scripts/bundle.mjs"]) at(root, file, t)
  return root
}

const at = (root: string, file: string, t: number) => {
  writeFileSync(join(root, file), "x")
  utimesSync(join(root, file), t, t)
}

const T = 1_800_000_000

describe("staleBuild", () => {
  it("says to build when dist/main.js is missing", () => {
    const root = project(T)
    assert.include(staleBuild(root), "dist/main.js is missing")
    assert.include(staleBuild(root), "npm run build")
    assert.include(staleBuild(root), "ANNA_TEST_ENTRY=src")
  })

  it("accepts a build newer than every source and the bundling script", () => {
    const root = project(T)
    at(root, "dist/main.js", T + 10)
    assert.isUndefined(staleBuild(root))
  })

  it("names the source changed since the build, and the bundling script", () => {
    const root = project(T)
    at(root, "dist/main.js", T + 10)
    at(root, "src/a/b.ts", T + 20)
    assert.include(staleBuild(root), "src/a/b.ts")
    assert.include(staleBuild(root), "npm run build")
    at(root, "src/a/b.ts", T)
    at(root, "scripts/bundle.mjs", T + 20)
    assert.include(staleBuild(root), "scripts/bundle.mjs")
  })

  it("ignores documentation under src/ (not part of the build)", () => {
    const root = project(T)
    at(root, "dist/main.js", T + 10)
    at(root, "src/a/README.md", T + 20)
    assert.isUndefined(staleBuild(root))
  })
})
