/**
 * README's "What the busybox image can do" is true of the image `anna sandbox build-image --busybox`
 * makes (the test image is built that way, see test/support/docker.ts): every command it names is
 * there, every one it says is missing is missing, and `wget -T` crashes while `timeout … wget` is the
 * way that works (issue 24: busybox's wget "segfaulted" with nobody saying why). Run through
 * `anna sandbox exec`, as the bash tool runs commands. Real Docker engine.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { afterAll } from "vitest"
import { annaEnv, newHome } from "../support/cli.ts"
import { removeTemp } from "../support/cleanup.ts"
import { dockerReady, TEST_IMAGE } from "../support/docker.ts"

const README = readFileSync(resolve(import.meta.dirname, "../../README.md"), "utf8")
const home = newHome()
afterAll(() => removeTemp(home))

/** The paragraph, from its bold title to the blank line after it. */
const paragraph = (): string => {
  const start = README.indexOf("**What the busybox image can do.**")
  assert.isAtLeast(start, 0, "README's Sandbox image section says what the busybox image can do")
  const end = README.indexOf("\n\n", start)
  return README.slice(start, end < 0 ? undefined : end).replace(/\s+/g, " ")
}

const commands = (text: string) => [...text.matchAll(/`([a-z0-9]+)`/g)].map((m) => m[1] ?? "")

const exec = (...command: ReadonlyArray<string>) => annaEnv(home, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", ...command)

describe.skipIf(!dockerReady)("README: what the busybox sandbox image can do (real Docker engine)", () => {
  it("has every command it names, and none of those it says are missing", async () => {
    const text = paragraph()
    const present = commands(text.slice(text.indexOf("nothing else:"), text.indexOf("There is no package manager")))
    const missing = commands(text.slice(text.indexOf("There is no package manager"), text.indexOf("and no Node")))
    assert.isAbove(present.length, 30)
    assert.includeMembers(missing, ["bash", "curl", "zip", "jq"])
    const check = (names: ReadonlyArray<string>) => names.map((n) => `command -v ${n} >/dev/null && echo "${n} yes" || echo "${n} no"`).join("; ")
    const r = await exec("sh", "-c", `${check(present)}; ${check(missing)}`)
    assert.strictEqual(r.code, 0, r.stderr)
    const found = new Map(r.stdout.trim().split("\n").map((l) => l.split(" ") as [string, string]))
    assert.deepStrictEqual(present.filter((n) => found.get(n) !== "yes"), [], "named but missing")
    assert.deepStrictEqual(missing.filter((n) => found.get(n) !== "no"), [], "said to be missing but there")
  }, 120_000)

  it("wget -T crashes (exit 139), timeout … wget works", async () => {
    assert.include(paragraph(), "`wget -T SECONDS` crashes with a segmentation fault (exit 139)")
    // Nothing listens on port 1 of the container's own loopback: a working wget is refused, exit 1.
    const crashed = await exec("wget", "-T", "5", "-O", "/dev/null", "http://127.0.0.1:1/")
    assert.strictEqual(crashed.code, 139, crashed.stderr)
    const bounded = await exec("timeout", "5", "wget", "-O", "/dev/null", "http://127.0.0.1:1/")
    assert.strictEqual(bounded.code, 1, bounded.stderr)
    assert.include(bounded.stderr, "Connection refused")
  }, 120_000)
})
