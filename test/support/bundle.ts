/**
 * The `anna` binary as `npm run build` bundles it (scripts/bundle.mjs), built by a test into a folder
 * of its own, so the test sees what the sources and the bundling script make now, whatever state the
 * shared dist/ is in. The folder is inside the package (dist/'s sibling under .anna-test/), so the
 * bundle finds node_modules and migrations/ as dist/ would.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"

export const ROOT = resolve(import.meta.dirname, "../..")

/** What esbuild says of one bundled input (its metafile). */
export interface BundleInput {
  readonly format?: "cjs" | "esm"
}

export interface Bundle {
  /** The output folder (main.js, chunks/, help.txt). */
  readonly out: string
  /** Its main.js: what `npm start` and the `anna` bin run. */
  readonly main: string
  /** The inputs esbuild bundled, by path relative to the package (`node_modules/…` for dependencies). */
  readonly inputs: Readonly<Record<string, BundleInput>>
  readonly remove: () => void
}

export const buildBundle = (): Bundle => {
  mkdirSync(join(ROOT, ".anna-test"), { recursive: true })
  const out = mkdtempSync(join(ROOT, ".anna-test", "bundle-"))
  const meta = join(out, "meta.json")
  execFileSync(process.execPath, ["scripts/bundle.mjs"], {
    cwd: ROOT,
    env: { ...process.env, ANNA_BUNDLE_OUT: out, ANNA_BUNDLE_META: meta },
    stdio: "pipe"
  })
  const inputs = (JSON.parse(readFileSync(meta, "utf8")) as { inputs: Record<string, BundleInput> }).inputs
  return { out, main: join(out, "main.js"), inputs, remove: () => rmSync(out, { recursive: true, force: true }) }
}
