/**
 * The login throttle through the admin API over a real socket, with clients on several loopback
 * addresses (Linux routes all of 127.0.0.0/8 to `lo`, so a client may bind 127.0.0.2, .3, … as its
 * source): failures from one address slow down, then refuse, that address's attempts on that
 * username — never another address's; `X-Forwarded-For` counts only when the peer is in
 * `admin.trusted_proxies`; a throttled login is 429 with Retry-After, alike for an unknown username.
 *
 * Each test uses its own addresses, so the tests of this file do not throttle each other.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "node:http"
import { ADMIN, Harness, harnessLayer, outcome } from "../../support/adminHarness.ts"

interface Answer {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly code: string | undefined
  readonly message: string | undefined
}

/** POST /api/auth/login from the source address `from`, with extra headers (X-Forwarded-For, say). */
const loginFrom = (base: string, from: string, username: string, password: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<Answer>((resolve, reject) => {
      const url = new URL("/api/auth/login", base)
      const body = JSON.stringify({ username, password })
      const req = request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress: from,
        // A fresh connection each time: a pooled one could have another source address.
        agent: false,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...headers }
      }, (res) => {
        let text = ""
        res.on("data", (d: Buffer) => (text += d.toString()))
        res.on("end", () => {
          const parsed = (text === "" ? {} : JSON.parse(text)) as { error?: { code?: string; message?: string } }
          const retryAfter = res.headers["retry-after"]
          resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined, code: parsed.error?.code, message: parsed.error?.message })
        })
      })
      req.on("error", reject)
      req.end(body)
    })
  )

const WRONG = "not-the-password-0"

layer(harnessLayer(), { excludeTestServices: true, timeout: "120 seconds" })("the login throttle", (it) => {
  it.effect("a stranger's 50 wrong passwords from one address do not stop the admin logging in from another", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const statuses: Array<number> = []
      for (let i = 0; i < 50; i++) statuses.push((yield* loginFrom(h.url, "127.0.0.2", ADMIN.user, `${WRONG}${i}`)).status)
      assert.deepStrictEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401], "five typos are free")
      assert.strictEqual(statuses[5], 429, "then the address waits")
      assert.isTrue(statuses.every((s) => s === 401 || s === 429), statuses.join(" "))
      // The stranger's address is refused even with the right password…
      const stranger = yield* loginFrom(h.url, "127.0.0.2", ADMIN.user, ADMIN.password)
      assert.strictEqual(stranger.status, 429)
      // …and the admin, from their own address, logs in at once.
      assert.strictEqual((yield* loginFrom(h.url, "127.0.0.3", ADMIN.user, ADMIN.password)).status, 200)
      // So may anyone else from the stranger's address (the backoff is per username there).
      assert.strictEqual((yield* loginFrom(h.url, "127.0.0.2", "alice", "alice-password-5678")).status, 200)
    }))

  it.effect("a throttled login is 429 with a Retry-After of 30 s after five failures, alike for an unknown username", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      const throttledAfterSix = (username: string) =>
        Effect.gen(function*() {
          for (let i = 0; i < 5; i++) assert.strictEqual((yield* loginFrom(h.url, "127.0.0.4", username, `${WRONG}${i}`)).status, 401)
          return yield* loginFrom(h.url, "127.0.0.4", username, `${WRONG}x`)
        })
      const known = yield* throttledAfterSix(ADMIN.user)
      const unknown = yield* throttledAfterSix("nobody-at-all")
      for (const a of [known, unknown]) {
        assert.strictEqual(a.status, 429)
        assert.strictEqual(a.code, "throttled")
        const seconds = Number(a.retryAfter)
        assert.isTrue(Number.isInteger(seconds) && seconds >= 1 && seconds <= 30, `Retry-After: ${a.retryAfter}`)
        assert.include(a.message ?? "", "try again in")
      }
      // The same words, whether the username exists or not (only the seconds may differ).
      assert.strictEqual(known.message?.replace(/\d+/g, "N"), unknown.message?.replace(/\d+/g, "N"))
    }))

  it.effect("X-Forwarded-For from a peer that is not a trusted proxy is ignored", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // A stranger at 127.0.0.5 claims a new address on every try: still one address, throttled.
      const statuses: Array<number> = []
      for (let i = 0; i < 10; i++) {
        statuses.push((yield* loginFrom(h.url, "127.0.0.5", ADMIN.user, `${WRONG}${i}`, { "x-forwarded-for": `198.51.100.${i}` })).status)
      }
      assert.deepStrictEqual(statuses.slice(4, 7), [401, 429, 429])
      // Claiming the admin's address does not borrow their clean slate…
      const spoofed = yield* loginFrom(h.url, "127.0.0.5", ADMIN.user, ADMIN.password, { "x-forwarded-for": "127.0.0.6" })
      assert.strictEqual(spoofed.status, 429)
      // …nor did the stranger's failures land on it: the admin at 127.0.0.6 logs in.
      assert.strictEqual((yield* loginFrom(h.url, "127.0.0.6", ADMIN.user, ADMIN.password)).status, 200)
    }))

  it.effect("X-Forwarded-For from a trusted proxy is honoured: the right-most untrusted entry is the client", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      // Not an address or CIDR: refused, nothing stored.
      assert.strictEqual(yield* outcome(h.admin.settings.set({ params: { key: "admin.trusted_proxies" }, payload: { value: "proxy.example" } })), 400)
      const set = yield* h.admin.settings.set({ params: { key: "admin.trusted_proxies" }, payload: { value: "127.0.0.8, 127.0.1.0/24" } })
      assert.strictEqual(set.value, "127.0.0.8, 127.0.1.0/24")

      const viaProxy = (client: string, password: string) =>
        loginFrom(h.url, "127.0.0.8", ADMIN.user, password, { "x-forwarded-for": client })
      // The attacker at 203.0.113.7 puts a made-up address first; the proxy appends what it saw.
      const statuses: Array<number> = []
      for (let i = 0; i < 6; i++) statuses.push((yield* viaProxy("10.9.9.9, 203.0.113.7", `${WRONG}${i}`)).status)
      assert.deepStrictEqual(statuses, [401, 401, 401, 401, 401, 429])
      // Through the same proxy, the admin at 203.0.113.8 is another client: let in.
      assert.strictEqual((yield* viaProxy("203.0.113.8", ADMIN.password)).status, 200)
      // The attacker naming the admin's address on the left is still the attacker…
      assert.strictEqual((yield* viaProxy("203.0.113.8, 203.0.113.7", ADMIN.password)).status, 429)
      // …also through a second trusted hop (127.0.1.5 forwarded to 127.0.0.8).
      assert.strictEqual((yield* viaProxy("203.0.113.8, 203.0.113.7, 127.0.1.5", ADMIN.password)).status, 429)
      // A peer outside the list is its own client, whatever it forwards.
      assert.strictEqual((yield* loginFrom(h.url, "127.0.0.9", ADMIN.user, ADMIN.password, { "x-forwarded-for": "203.0.113.7" })).status, 200)

      yield* h.admin.settings.unset({ params: { key: "admin.trusted_proxies" } })
      // Without the setting, the proxy is the client: its own slate is clean.
      assert.strictEqual((yield* viaProxy("203.0.113.7", ADMIN.password)).status, 200)
    }))
})
