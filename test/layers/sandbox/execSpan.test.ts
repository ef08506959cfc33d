/**
 * A sandbox command's span (issue 27): its duration is the exec time, and it says how the command
 * ended (exit code, timed out) — never the command, its output or its working folder. Real Docker
 * engine (skipped with a warning without one).
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_LIMITS } from "../../../src/domain/sandbox/types.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import { removeTemp } from "../../support/cleanup.ts"
import { dockerReady, TEST_IMAGE } from "../../support/docker.ts"
import { recordingTracer } from "../../support/spans.ts"

describe.skipIf(!dockerReady)("SandboxSession.exec's span (real Docker engine)", () => {
  it.live("holds the exit code and whether it timed out, not the command or its output", () => {
    const { tracer, spans } = recordingTracer()
    return Effect.gen(function*() {
      const workspace = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-exec-span-"))),
        (dir) => Effect.promise(() => removeTemp(dir))
      )
      const sandbox = yield* DockerSandbox.make(new Docker())
      const session = yield* sandbox.start({ agentId: "spans", userId: "", workspace, image: TEST_IMAGE, network: "disabled", limits: DEFAULT_LIMITS })
      const ran = yield* session.exec("echo secret-output-8812; exit 3")
      assert.strictEqual(ran.exitCode, 3)
      yield* session.exec("sleep 5", { timeoutMs: 300 })
      const execs = spans.filter((s) => s.name === "SandboxSession.exec")
      assert.lengthOf(execs, 2)
      const [first, second] = execs
      assert.strictEqual(first?.attributes.get("process.exit.code"), 3)
      assert.strictEqual(first?.attributes.get("anna.sandbox.timed_out"), false)
      assert.isAtLeast(Number(first?.attributes.get("anna.sandbox.duration_ms")), 0)
      assert.strictEqual(second?.attributes.get("anna.sandbox.timed_out"), true)
      const said = JSON.stringify(spans.map((s) => [s.name, [...s.attributes.entries()]]))
      for (const text of ["secret-output-8812", "echo", "sleep", workspace]) assert.notInclude(said, text)
    }).pipe(Effect.scoped, Effect.withTracer(tracer))
  }, 60_000)
})
