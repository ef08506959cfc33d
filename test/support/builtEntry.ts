/**
 * Whether the built `anna` (dist/main.js) can stand for the sources: the end-to-end tests run it (see
 * cli.ts), so a build that is missing, or older than a source file or the bundling script, would
 * test old code and pass or fail for the wrong reason. `npm test` builds first (`pretest`); a
 * targeted `npx vitest run` after an edit does not, hence this check and its message.
 */
import { existsSync, readdirSync, statSync } from "node:fs"
import { join, relative } from "node:path"

/** The newest file under `dir` (documentation left out: it is not built), with its time. */
const newestUnder = (dir: string): { readonly file: string; readonly mtimeMs: number } | undefined => {
  let newest: { file: string; mtimeMs: number } | undefined
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.endsWith(".md")) continue
    const file = join(entry.parentPath, entry.name)
    const mtimeMs = statSync(file).mtimeMs
    if (newest === undefined || mtimeMs > newest.mtimeMs) newest = { file, mtimeMs }
  }
  return newest
}

const REMEDY = "run `npm run build` first (or set ANNA_TEST_ENTRY=src to run the sources)"

/** Why `root`'s dist/main.js cannot be tested as it is, or undefined when it is newer than what it is built from. */
export const staleBuild = (root: string): string | undefined => {
  const main = join(root, "dist", "main.js")
  if (!existsSync(main)) return `the end-to-end tests run the built anna and dist/main.js is missing: ${REMEDY}`
  const built = statSync(main).mtimeMs
  const bundler = join(root, "scripts", "bundle.mjs")
  const sources = [newestUnder(join(root, "src")), existsSync(bundler) ? { file: bundler, mtimeMs: statSync(bundler).mtimeMs } : undefined]
  const changed = sources.flatMap((s) => (s !== undefined && s.mtimeMs > built ? [relative(root, s.file)] : []))
  return changed.length === 0
    ? undefined
    : `the end-to-end tests run the built anna and dist/main.js is older than ${changed.join(" and ")}: ${REMEDY}`
}
