import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { clusterSettings, formatHostPort, nodeIdFrom } from "../../../src/domain/cluster/settings.ts"

const from = (env: Record<string, string>) => clusterSettings((name) => env[name], "web-1.example")

describe("cluster settings", () => {
  it("no ANNA_RUNNER_ADDRESS: not a cluster", () => {
    expect(from({})).toEqual(Result.succeed(undefined))
    expect(from({ ANNA_RUNNER_ADDRESS: "  " })).toEqual(Result.succeed(undefined))
  })

  it("defaults: listen on the advertised address, node id from the host name and port, 300 shards, 10 s lease, 120 s shutdown", () => {
    expect(from({ ANNA_RUNNER_ADDRESS: "10.0.0.5:34431" })).toEqual(Result.succeed({
      address: { host: "10.0.0.5", port: 34431 },
      listen: { host: "10.0.0.5", port: 34431 },
      nodeId: "web-1.example-34431",
      shards: 300,
      leaseSeconds: 10,
      shutdownSeconds: 120
    }))
  })

  it("every setting explicit; never the bare PORT or HOST of the environment", () => {
    const s = from({
      ANNA_RUNNER_ADDRESS: "[fd00::5]:4000",
      ANNA_RUNNER_LISTEN: "0.0.0.0:4000",
      ANNA_NODE_ID: "eu-a",
      ANNA_CLUSTER_SHARDS: "60",
      ANNA_CLUSTER_LEASE_SECONDS: "5",
      ANNA_CLUSTER_SHUTDOWN_SECONDS: "30",
      PORT: "8080",
      HOST: "example.com"
    })
    expect(s).toEqual(Result.succeed({
      address: { host: "fd00::5", port: 4000 },
      listen: { host: "0.0.0.0", port: 4000 },
      nodeId: "eu-a",
      shards: 60,
      leaseSeconds: 5,
      shutdownSeconds: 30
    }))
    expect(formatHostPort({ host: "fd00::5", port: 4000 })).toBe("[fd00::5]:4000")
  })

  it("a bad value is one line naming the variable", () => {
    const problem = (env: Record<string, string>) => Result.match(from(env), { onSuccess: () => "", onFailure: (m) => m })
    expect(problem({ ANNA_RUNNER_ADDRESS: "10.0.0.5" })).toMatch(/^ANNA_RUNNER_ADDRESS="10.0.0.5" is not host:port/)
    expect(problem({ ANNA_RUNNER_ADDRESS: "h:70000" })).toMatch(/^ANNA_RUNNER_ADDRESS/)
    expect(problem({ ANNA_RUNNER_ADDRESS: "h:1", ANNA_RUNNER_LISTEN: "x" })).toMatch(/^ANNA_RUNNER_LISTEN/)
    expect(problem({ ANNA_RUNNER_ADDRESS: "h:1", ANNA_NODE_ID: "a b" })).toMatch(/^ANNA_NODE_ID/)
    expect(problem({ ANNA_RUNNER_ADDRESS: "h:1", ANNA_CLUSTER_SHARDS: "0" })).toMatch(/^ANNA_CLUSTER_SHARDS="0" is not a whole number/)
    expect(problem({ ANNA_RUNNER_ADDRESS: "h:1", ANNA_CLUSTER_LEASE_SECONDS: "1" })).toMatch(/^ANNA_CLUSTER_LEASE_SECONDS=1 is too short/)
    expect(problem({ ANNA_RUNNER_ADDRESS: "h:1", ANNA_CLUSTER_SHUTDOWN_SECONDS: "1.5" })).toMatch(/^ANNA_CLUSTER_SHUTDOWN_SECONDS/)
    // A cluster setting without the address is a mistake, not silently one gateway.
    expect(problem({ ANNA_NODE_ID: "a" })).toMatch(/^ANNA_NODE_ID is set but ANNA_RUNNER_ADDRESS is not/)
  })

  it("node ids from host names keep to safe characters", () => {
    expect(nodeIdFrom("my host/ü", 1)).toBe("my-host---1")
    expect(nodeIdFrom("", 7)).toBe("node-7")
  })
})
