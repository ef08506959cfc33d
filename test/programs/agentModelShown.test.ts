/**
 * The agent `anna onboard --from-env` makes runs on its provider's default model (issue 24): `anna
 * agent list` and `anna agent show` name that model as PROVIDER/MODEL, not the provider alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { rmSync } from "node:fs"
import { afterAll } from "vitest"
import { annaEnv, newHome } from "../support/cli.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

describe("the agent onboard makes", () => {
  it("is listed and shown with its model as PROVIDER/MODEL", async () => {
    const h = newHome()
    homes.push(h)
    // Nothing listens there: onboarding takes its built-in default model for the provider.
    const env = { OPENAI_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_API_KEY: "sk-test" }
    const onboard = await annaEnv(h, env, "onboard", "--from-env")
    assert.strictEqual(onboard.code, 0, onboard.stderr)
    const providers = JSON.parse((await annaEnv(h, {}, "provider", "list", "--json")).stdout) as Array<{ id: string; defaultModel: string }>
    const model = providers.find((p) => p.id === "openai")?.defaultModel ?? ""
    assert.notStrictEqual(model, "")

    const list = await annaEnv(h, {}, "agent", "list")
    assert.strictEqual(list.code, 0, list.stderr)
    const row = list.stdout.split("\n").find((l) => l.startsWith("default "))
    assert.match(row ?? "", new RegExp(`^default\\s+openai/${model.replaceAll(".", "\\.")}\\b`), list.stdout)

    const show = await annaEnv(h, {}, "agent", "show", "default")
    assert.match(show.stdout, new RegExp(`^\\s*model\\s+openai/${model.replaceAll(".", "\\.")}\\b`, "m"), show.stdout)
  }, 60_000)
})
