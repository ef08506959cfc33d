/** The workspace tools' shared cases on the real Docker sandbox (skipped with a warning without Docker). */
import { describe } from "@effect/vitest"
import Docker from "dockerode"
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_LIMITS } from "../../../src/domain/sandbox/types.ts"
import * as DockerSandbox from "../../../src/layers/sandbox/DockerSandbox.ts"
import { dockerReady, TEST_IMAGE } from "../../support/docker.ts"
import { workspaceToolCases } from "../../support/workspaceToolCases.ts"
import { removeTemp } from "../../support/cleanup.ts"

const session = Effect.gen(function*() {
  const workspace = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-tools-ws-"))),
    (dir) => Effect.promise(() => removeTemp(dir))
  )
  const sandbox = yield* DockerSandbox.make(new Docker())
  return yield* sandbox.start({ agentId: "tools", userId: "", workspace, image: TEST_IMAGE, network: "disabled", limits: DEFAULT_LIMITS })
})

describe.skipIf(!dockerReady)("workspace tools on the Docker sandbox", () => {
  workspaceToolCases(session)
})
