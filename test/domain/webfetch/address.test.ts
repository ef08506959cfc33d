/**
 * The SSRF guard's address rules against a table of hostile URLs: every spelling of loopback, the
 * private networks and the metadata address a user might try — odd IPv4 forms the URL parser
 * normalises, IPv4-mapped/compatible IPv6, NAT64, 6to4 — each refused with its reason; public
 * addresses let through; `allow_private` relaxing all but the metadata endpoints.
 */
import { assert, describe, it } from "@effect/vitest"
import { embeddedIpv4, type FetchPolicy, refuseAddress, refuseUrl, STRICT } from "../../../src/domain/webfetch/address.ts"

const refusal = (url: string, policy: FetchPolicy = STRICT) => refuseUrl(new URL(url), policy)

/** [url, a fragment of the reason] */
const HOSTILE: ReadonlyArray<readonly [string, string]> = [
  ["http://127.0.0.1/", "loopback"],
  ["http://127.0.0.1:22/", "loopback"],
  ["http://2130706433/", "loopback"], // decimal
  ["http://0x7f.1/", "loopback"], // hex + short form
  ["http://0x7f000001/", "loopback"],
  ["http://0177.0.0.1/", "loopback"], // octal
  ["http://127.1/", "loopback"],
  ["http://127.0.0.1./", "loopback"], // trailing dot
  ["http://%31%32%37.0.0.1/", "loopback"], // percent-encoded
  ["http://①②⑦.0.0.1/", "loopback"], // full-width / circled digits (IDNA-mapped)
  ["http://localhost%2e/", "loopback"],
  ["http://127.255.255.254/", "loopback"],
  ["http://[::1]/", "loopback"],
  ["http://[0:0:0:0:0:0:0:1]/", "loopback"],
  ["http://[::ffff:127.0.0.1]/", "IPv4-mapped IPv6 form of 127.0.0.1"],
  ["http://[::ffff:7f00:1]/", "IPv4-mapped IPv6 form of 127.0.0.1"],
  ["http://[0:0:0:0:0:ffff:7f00:1]/", "IPv4-mapped IPv6 form of 127.0.0.1"],
  ["http://[::127.0.0.1]/", "IPv4-compatible IPv6 form of 127.0.0.1"],
  ["http://[64:ff9b::7f00:1]/", "NAT64 (64:ff9b::/96) form of 127.0.0.1"],
  ["http://[64:ff9b::10.0.0.1]/", "NAT64 (64:ff9b::/96) form of 10.0.0.1"],
  ["http://[2002:7f00:1::]/", "6to4 (2002::/16) form of 127.0.0.1"],
  ["http://[2002:a9fe:a9fe::1]/", "metadata"],
  ["http://169.254.169.254/latest/meta-data/", "metadata"],
  ["http://[::ffff:169.254.169.254]/", "metadata"],
  ["http://[::ffff:a9fe:a9fe]/", "metadata"],
  ["http://2852039166/", "metadata"], // 169.254.169.254 in decimal
  ["http://[fd00:ec2::254]/", "metadata"],
  ["http://169.254.1.1/", "link-local"],
  ["http://10.0.0.1/", "private address (10.0.0.0/8)"],
  ["http://172.16.5.4/", "private address (172.16.0.0/12)"],
  ["http://172.31.255.255/", "private"],
  ["http://192.168.1.1/", "private address (192.168.0.0/16)"],
  ["http://[::ffff:192.168.1.1]/", "IPv4-mapped IPv6 form of 192.168.1.1"],
  ["http://100.64.0.1/", "carrier-grade NAT"],
  ["http://0.0.0.0/", "unspecified"],
  ["http://0/", "unspecified"],
  ["http://[::]/", "unspecified"],
  ["http://224.0.0.1/", "multicast"],
  ["http://255.255.255.255/", "broadcast"],
  ["http://[ff02::1]/", "multicast"],
  ["http://[fe80::1]/", "link-local"],
  ["http://[fc00::1]/", "unique-local"],
  ["http://[fd12:3456::1]/", "unique-local"],
  ["http://[2001::1]/", "Teredo"],
  ["http://198.18.0.1/", "benchmarking"],
  ["http://localhost/", "loopback"],
  ["http://LOCALHOST./", "loopback"],
  ["http://foo.localhost:8080/", "loopback"],
  ["http://metadata.google.internal/computeMetadata/v1/", "metadata"],
  ["http://printer.local/", "local or internal"],
  ["http://db.corp.internal/", "local or internal"],
  ["file:///etc/passwd", "only http and https"],
  ["ftp://example.com/", "only http and https"],
  ["gopher://example.com:70/", "only http and https"],
  ["javascript:alert(1)", "only http and https"],
  ["http://user:secret@example.com/", "user name or password"]
]

describe("webfetch SSRF guard: refuseUrl", () => {
  for (const [url, why] of HOSTILE) {
    it(`refuses ${url}`, () => {
      const reason = refusal(url)
      assert.isDefined(reason, url)
      assert.include(reason ?? "", why)
    })
  }

  it("lets public addresses and host names through (names are checked again after DNS)", () => {
    for (const url of ["http://93.184.216.34/", "https://8.8.8.8:8443/x", "http://[2606:4700:4700::1111]/", "https://example.com/a?b=c", "http://1.1.1.1:22/"]) {
      assert.isUndefined(refusal(url), url)
    }
  })

  it("allow_private lets private and loopback addresses through, never the metadata endpoints", () => {
    const relaxed: FetchPolicy = { allowPrivate: true, allowHosts: [] }
    for (const url of ["http://127.0.0.1:8080/", "http://[::1]/", "http://10.1.2.3/", "http://localhost/", "http://[::ffff:7f00:1]/"]) {
      assert.isUndefined(refusal(url, relaxed), url)
    }
    for (const url of ["http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/", "http://metadata.google.internal/", "http://[fd00:ec2::254]/"]) {
      assert.include(refusal(url, relaxed) ?? "", "metadata", url)
    }
  })

  it("allow_hosts lets exactly the listed hosts through", () => {
    const policy: FetchPolicy = { allowPrivate: false, allowHosts: ["intranet.test", "10.0.0.5"] }
    assert.isUndefined(refuseAddress("10.9.9.9", "intranet.test", policy))
    assert.isUndefined(refusal("http://10.0.0.5/", policy))
    assert.include(refusal("http://10.0.0.6/", policy) ?? "", "private")
    assert.include(refuseAddress("127.0.0.1", "other.test", policy) ?? "", "other.test resolves to 127.0.0.1")
    assert.include(refuseAddress("169.254.169.254", "intranet.test", policy) ?? "", "metadata")
  })
})

describe("webfetch SSRF guard: addresses", () => {
  it("refuses every loopback, private and link-local IPv4 address in its mapped, NAT64 and 6to4 forms", () => {
    const samples = ["127.0.0.1", "127.8.9.10", "10.20.30.40", "172.20.0.1", "192.168.255.1", "169.254.0.9", "100.100.1.1", "0.1.2.3"]
    for (const ip of samples) {
      const [a, b, c, d] = ip.split(".").map(Number)
      const hex = (x: number, y: number) => ((x << 8) | y).toString(16)
      const hi = hex(a ?? 0, b ?? 0)
      const lo = hex(c ?? 0, d ?? 0)
      for (const form of [`::ffff:${ip}`, `::ffff:${hi}:${lo}`, `64:ff9b::${hi}:${lo}`, `2002:${hi}:${lo}::1`, `::${hi}:${lo}`]) {
        assert.strictEqual(embeddedIpv4(form)?.ipv4, ip, form)
        assert.isDefined(refuseAddress(form, form, STRICT), form)
      }
      assert.isDefined(refuseAddress(ip, "some.test", STRICT), ip)
    }
  })

  it("reports the host name and the address it resolved to", () => {
    assert.strictEqual(refuseAddress("127.0.0.1", "evil.test", STRICT), "evil.test resolves to 127.0.0.1, a loopback address (127.0.0.0/8)")
    assert.isUndefined(refuseAddress("93.184.216.34", "example.com", STRICT))
    assert.isUndefined(refuseAddress("2606:2800:220:1:248:1893:25c8:1946", "example.com", STRICT))
  })
})
