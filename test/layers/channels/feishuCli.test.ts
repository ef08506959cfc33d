/**
 * The Feishu/Lark channel's CLI side against the fake open platform: `anna channel set feishu`
 * (its keys checked), `anna doctor`'s credential check (a clear message for a wrong secret, never
 * the secret itself) and `anna notify --channel feishu` to a user's open_id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { afterAll, afterEach, beforeEach } from "vitest"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { ConfigStore } from "../../../src/services/ConfigStore.ts"
import { anna, newHome } from "../../support/cli.ts"
import { type FakeFeishu, startFakeFeishu } from "../../support/fakeFeishu/server.ts"
import { homeDatabase } from "../../support/db.ts"

const homes: Array<string> = []
afterAll(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true })
})

let fs: FakeFeishu
beforeEach(async () => {
  fs = await startFakeFeishu()
})
afterEach(async () => {
  await fs.close()
})

const withConfig = <A, E>(h: string, self: Effect.Effect<A, E, ConfigStore>) =>
  Effect.runPromise(self.pipe(Effect.provide(SqliteRuntimeConfig.layerWithStores(h).pipe(Layer.provideMerge(homeDatabase(h))))))

interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
  readonly fix?: string
}

describe("anna and the feishu channel", () => {
  it("doctor checks the app credentials and says what to do about a wrong secret; notify writes to the user's open_id", async () => {
    const h = newHome()
    homes.push(h)
    const badKey = await anna(h, "channel", "set", "feishu", "--config", "app_id=12345")
    assert.strictEqual(badKey.code, 2, "a bad value is a usage error")
    assert.include(badKey.stderr, "app_id")
    const set = await anna(h, "channel", "set", "feishu", "--config", `app_id=${fs.appId}`, "--config", "app_secret=NotTheRightSecret000", "--config", `base_url=${fs.baseUrl}`)
    assert.strictEqual(set.code, 0, set.stderr)
    await anna(h, "channel", "enable", "feishu")
    const bad = await anna(h, "doctor", "--json")
    assert.strictEqual(bad.code, 1)
    const refused = (JSON.parse(bad.stdout) as { checks: ReadonlyArray<Check> }).checks.find((c) => c.name === "feishu")
    assert.isFalse(refused?.ok)
    assert.include(refused?.detail ?? "", "refused the app credentials (code 10014")
    assert.include(refused?.fix ?? "", "anna channel set feishu --config app_id=")
    assert.notInclude(bad.stdout, "NotTheRightSecret000")

    const fixed = await anna(h, "channel", "set", "feishu", "--config", `app_secret=${fs.appSecret}`)
    assert.strictEqual(fixed.code, 0, fixed.stderr)
    const ok = await anna(h, "doctor", "--json")
    const check = (JSON.parse(ok.stdout) as { checks: ReadonlyArray<Check> }).checks.find((c) => c.name === "feishu")
    assert.isTrue(check?.ok, JSON.stringify(check))
    assert.include(check?.detail ?? "", "anna test bot")

    const openId = "ou_cli0000000000000000000000000001"
    const ann = await withConfig(h, ConfigStore.use((c) => c.upsertUser("feishu", openId, "Ann")))
    const sent = await anna(h, "notify", ann.id, "Backup **done**", "--channel", "feishu", "--json")
    assert.strictEqual(sent.code, 0, sent.stderr)
    assert.deepStrictEqual(JSON.parse(sent.stdout), { user: ann.id, channel: "feishu", delivered: true })
    const [card] = fs.messages(fs.dmChat(openId))
    assert.strictEqual(card?.text, "Backup **done**")
    assert.isTrue(card?.rich)
  })
})
