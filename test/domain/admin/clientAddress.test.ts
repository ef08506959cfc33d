/**
 * Who the login throttle counts (src/domain/admin/clientAddress.ts): the peer, unless it is a
 * trusted proxy — then the right-most X-Forwarded-For entry outside the list; the setting's check;
 * the throttle key (IPv6 by /64).
 */
import { assert, describe, it } from "@effect/vitest"
import { clientAddress, parseTrustedProxies, throttleKey, trustedProxiesProblem } from "../../../src/domain/admin/clientAddress.ts"

describe("the client's address", () => {
  const trusted = parseTrustedProxies("10.0.0.1, 10.1.0.0/16 fd00::/8")
  it("is the peer when the peer is not a trusted proxy, whatever it forwards", () => {
    assert.strictEqual(clientAddress("203.0.113.5", ["198.51.100.1"], trusted), "203.0.113.5")
    assert.strictEqual(clientAddress("::ffff:203.0.113.5", [], trusted), "203.0.113.5")
    assert.strictEqual(clientAddress(undefined, ["198.51.100.1"], trusted), "unknown")
    assert.strictEqual(clientAddress("203.0.113.5", ["198.51.100.1"], parseTrustedProxies("")), "203.0.113.5")
  })
  it("is the right-most X-Forwarded-For entry that is not a trusted proxy, when the peer is one", () => {
    assert.strictEqual(clientAddress("10.0.0.1", ["198.51.100.1"], trusted), "198.51.100.1")
    assert.strictEqual(clientAddress("::ffff:10.0.0.1", ["6.6.6.6, 198.51.100.1"], trusted), "198.51.100.1")
    assert.strictEqual(clientAddress("10.0.0.1", ["6.6.6.6, 198.51.100.1, 10.1.2.3"], trusted), "198.51.100.1")
    assert.strictEqual(clientAddress("fd00::5", ["6.6.6.6", "198.51.100.1, fd12::1"], trusted), "198.51.100.1")
    assert.strictEqual(clientAddress("10.0.0.1", ["[2001:db8::1]:4711"], trusted), "2001:db8::1")
    assert.strictEqual(clientAddress("10.0.0.1", ["198.51.100.1:4711"], trusted), "198.51.100.1")
    // No header, or only trusted hops: as close as anyone says.
    assert.strictEqual(clientAddress("10.0.0.1", [], trusted), "10.0.0.1")
    assert.strictEqual(clientAddress("10.0.0.1", ["10.1.0.9, 10.1.0.8"], trusted), "10.1.0.9")
    // Not an address: the hop that wrote it is the client.
    assert.strictEqual(clientAddress("10.0.0.1", ["198.51.100.1, unknown, 10.1.0.8"], trusted), "10.1.0.8")
  })
})

describe("admin.trusted_proxies", () => {
  it("takes addresses and CIDRs, comma- or space-separated, and nothing else", () => {
    for (const ok of ["", "10.0.0.1", "10.0.0.0/8, 192.168.1.1", "fd00::/8 ::1", "::ffff:10.0.0.1"]) assert.isUndefined(trustedProxiesProblem(ok), ok)
    for (const bad of ["proxy.example", "10.0.0.0/33", "fd00::/129", "10.0.0.1/8/8", "10.0.0.1/x", "*"]) {
      assert.include(trustedProxiesProblem(bad) ?? "", "must be IP addresses or CIDRs", bad)
    }
  })
})

describe("the throttle key", () => {
  it("is an IPv4 address itself, an IPv6 address's /64", () => {
    assert.strictEqual(throttleKey("192.0.2.1"), "192.0.2.1")
    assert.strictEqual(throttleKey("::ffff:192.0.2.1"), "192.0.2.1")
    assert.strictEqual(throttleKey("2001:DB8:1:2:3:4:5:6"), "2001:db8:1:2::/64")
    assert.strictEqual(throttleKey("2001:db8::1"), "2001:db8::/64")
    assert.strictEqual(throttleKey("unknown"), "unknown")
  })
})
