/**
 * What every chat platform's channel tests share: a gateway's worth of runtime on a home folder (the
 * database survives a "restart"), a channel built in a scope of its own (`stop` = the gateway
 * stopping), the model requests of the current test, the newest user message of a request, and a
 * wait until the ledger says every claimed message was answered (a reply's last write is on the wire
 * a moment before the ledger records it, and a stop in between would rightly answer it again).
 */
import { Context, type Duration, Effect, Exit, Layer, Schedule, Scope } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { beforeEach } from "vitest"
import * as SqliteChannelLedger from "../../src/layers/channels/SqliteChannelLedger.ts"
import { Channel } from "../../src/services/Channel.ts"
import { ChannelLedger } from "../../src/services/ChannelLedger.ts"
import type { RecordedRequest } from "./fakeLlm/script.ts"
import type { fakeLlmSuite } from "./fakeLlm/suite.ts"
import { runtimeStack } from "./runtimeStack.ts"

/** The runtime stack with the channel ledger, on `home`. */
export const stackOn = (home: string) => SqliteChannelLedger.layer.pipe(Layer.provideMerge(runtimeStack(home)))

/** Builds a channel in a scope of its own; `stop` closes it. */
export const startChannel = <E, R>(make: Effect.Effect<Channel["Service"], E, R>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Layer.effect(Channel, make), scope)
    return { channel: Context.get(context, Channel), stop: Scope.close(scope, Exit.void) }
  })

/** The content of the newest user message of a model request. */
export const lastUser = (r: RecordedRequest | undefined): unknown => {
  const messages = (r?.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> } | undefined)?.messages ?? []
  return [...messages].reverse().find((m) => m.role === "user")?.content
}

/** The same as text (blocks as JSON). */
export const lastUserText = (r: RecordedRequest | undefined): string => {
  const c = lastUser(r)
  return typeof c === "string" ? c : JSON.stringify(c ?? "")
}

/** Until every message claimed on `platform` is answered. */
export const allAnswered = (platform: string, timeout: Duration.Input = "15 seconds") =>
  ChannelLedger.use((ledger) => ledger.open(platform, 0)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (open) => open.length === 0 }),
    Effect.timeout(timeout)
  )

/**
 * Per test file: fresh homes (removed with the suite) and the model requests made since the current
 * test began (the fake server's list runs across the file's tests).
 */
export const channelHarness = (suite: ReturnType<typeof fakeLlmSuite>, prefix: string) => {
  let firstRequest = 0
  beforeEach(() => {
    firstRequest = suite.fake.requests.length
  })
  return {
    newHome: () => suite.keep(mkdtempSync(join(tmpdir(), `anna-${prefix}-`))),
    chatRequests: () => suite.fake.requests.slice(firstRequest).filter((r: RecordedRequest) => r.method === "POST")
  }
}
