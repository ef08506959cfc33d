/**
 * Sandbox containers left on the engine, as `anna doctor` reports them (real Docker engine): which
 * belong to a live anna process, which are orphans of a dead one (and how they go away), and which
 * another host made.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { Effect } from "effect"
import { hostname } from "node:os"
import { afterAll } from "vitest"
import { SANDBOX_LABEL } from "../../../src/domain/sandbox/types.ts"
import { containerChecks, sandboxContainers } from "../../../src/layers/sandbox/docker/client.ts"
import { AGENT_LABEL, OWNER_LABEL } from "../../../src/layers/sandbox/docker/policy.ts"
import { annaEnv, newHome } from "../../support/cli.ts"
import { dockerReady, TEST_IMAGE } from "../../support/docker.ts"
import { removeTemp } from "../../support/cleanup.ts"

const docker = new Docker()
const homes: Array<string> = []
afterAll(async () => {
  for (const h of homes) await removeTemp(h)
})

/** A labelled container owned by `owner` ("host:pid"), running, removed when the test's scope closes. */
const labelled = (owner: string, agent: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const c = await docker.createContainer({
        Image: TEST_IMAGE,
        Cmd: ["/bin/sh", "-c", "sleep 600"],
        Labels: { [SANDBOX_LABEL]: "1", [OWNER_LABEL]: owner, [AGENT_LABEL]: agent },
        HostConfig: { NetworkMode: "none" }
      })
      await c.start()
      return c.id
    }),
    (id) => Effect.promise(() => docker.getContainer(id).remove({ force: true }).catch(() => undefined))
  )

describe.skipIf(!dockerReady)("sandbox containers in anna doctor (real Docker engine)", () => {
  it.live("a container whose anna process is gone is an orphan; ours is live; another host's is foreign", () =>
    Effect.gen(function*() {
      // A PID far above any live one on this host: its process is gone. (Another test's sandbox
      // start may remove it as an orphan at any moment, so it is listed right away.)
      const orphan = yield* labelled(`${hostname()}:999999`, "ghost")
      const live = yield* labelled(`${hostname()}:${process.pid}`, "here")
      const foreign = yield* labelled("some-other-host:1", "there")
      const listed = yield* sandboxContainers(docker)
      const find = (id: string) => listed.find((c) => c.id === id)
      assert.deepInclude(find(orphan), { status: "orphan", state: "running", agent: "ghost" })
      assert.deepInclude(find(live), { status: "live", agent: "here" })
      assert.deepInclude(find(foreign), { status: "foreign", agent: "there" })

      const checks = containerChecks(listed)
      const line = (id: string) => checks.find((c) => c.name === `container ${id.slice(0, 12)}`)?.detail ?? ""
      assert.include(line(orphan), "orphan")
      assert.include(line(orphan), "999999 is gone")
      assert.include(line(orphan), "removed at the next start of anna")
      assert.include(line(orphan), `docker rm -f ${orphan.slice(0, 12)}`)
      assert.include(line(live), `running anna process ${process.pid}`)
      assert.include(line(foreign), "some-other-host")
      assert.deepStrictEqual(containerChecks([]).map((c) => c.detail), ["no sandbox container on the engine"])
    }))

  it.live("anna doctor lists them: live and foreign containers each on a line of their own", () =>
    Effect.gen(function*() {
      // Owned by this (live) test process and by another host: no sandbox start anywhere removes these.
      const live = yield* labelled(`${hostname()}:${process.pid}`, "here")
      const foreign = yield* labelled("some-other-host:1", "there")
      const h = newHome()
      homes.push(h)
      const r = yield* Effect.promise(() => annaEnv(h, {}, "doctor"))
      assert.include(r.stdout, `ok   sandbox/container ${live.slice(0, 12)}: running, agent here: belongs to the running anna process ${process.pid}`)
      assert.include(r.stdout, `ok   sandbox/container ${foreign.slice(0, 12)}: running, agent there: made by anna on some-other-host`)
    }), 60_000)
})
