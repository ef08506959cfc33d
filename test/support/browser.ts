/**
 * Headless Chromium for the browser tests, driven by playwright-core: Debian's `chromium` package
 * (no browser download works here; .ci/run installs it). `browserUnavailable()` says why a test
 * cannot run; with ANNA_REQUIRE_BROWSER set a missing browser fails the test instead of skipping it.
 */
import { existsSync, mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { type Browser, chromium } from "playwright-core"

const CANDIDATES = [process.env.ANNA_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]

export const chromiumPath = (): string | undefined => CANDIDATES.find((p): p is string => p !== undefined && p !== "" && existsSync(p))

/** Why the browser tests cannot run here (undefined: they can). */
export const browserUnavailable = (): string | undefined =>
  chromiumPath() === undefined ? "no Chromium found (apt-get install chromium, or set ANNA_CHROMIUM)" : undefined

export const browserRequired = (): boolean => process.env.ANNA_REQUIRE_BROWSER !== undefined && process.env.ANNA_REQUIRE_BROWSER !== ""

export const launchChromium = (): Promise<Browser> => {
  const executablePath = chromiumPath()
  if (executablePath === undefined) throw new Error(browserUnavailable())
  return chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] })
}

/** Where the tests put their screenshots (gitignored). */
export const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts")
export const artifact = (name: string): string => {
  mkdirSync(ARTIFACTS, { recursive: true })
  return join(ARTIFACTS, name)
}
