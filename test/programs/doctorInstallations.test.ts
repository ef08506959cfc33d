/**
 * `anna doctor` reports this installation's sandbox containers, not every anna's on the engine
 * (issue 24): on a machine (or an engine) shared by several installations — other users, test runs,
 * staging next to production — another one's containers are none of this one's business. An
 * installation is its ANNA_HOME on its host: its containers carry that in a label, and its start
 * removes only its own orphans. Real Docker engine, real CLI.
 */
import { assert, describe, it } from "@effect/vitest"
import Docker from "dockerode"
import { hostname } from "node:os"
import { afterAll } from "vitest"
import { SANDBOX_LABEL } from "../../src/domain/sandbox/types.ts"
import { annaEnv, finish, newHome, start } from "../support/cli.ts"
import { removeTemp } from "../support/cleanup.ts"
import { dockerReady, TEST_IMAGE, whenContainers } from "../support/docker.ts"

const docker = new Docker()
const homes: Array<string> = []
const containers: Array<string> = []
afterAll(async () => {
  for (const id of containers) await docker.getContainer(id).remove({ force: true }).catch(() => undefined)
  for (const h of homes) await removeTemp(h)
})

const OWNER = "dev.anna.owner"
const AGENT = "dev.anna.agent"
const INSTALLATION = "dev.anna.installation"

/** A sandbox container as another installation's anna on this host makes it. */
const otherInstallations = async (pid: number, agent: string) => {
  const c = await docker.createContainer({
    Image: TEST_IMAGE,
    Cmd: ["/bin/sh", "-c", "sleep 600"],
    Labels: { [SANDBOX_LABEL]: "1", [OWNER]: `${hostname()}:${pid}`, [AGENT]: agent, [INSTALLATION]: "another-installation-0123" },
    HostConfig: { NetworkMode: "none" }
  })
  containers.push(c.id)
  await c.start()
  return c.id
}

interface Check {
  readonly area: string
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

describe.skipIf(!dockerReady)("anna doctor and other installations' containers (real Docker engine)", () => {
  it("lists only this installation's containers; another's, live or orphaned, are counted in one line and never removed", async () => {
    // Another installation on this host: a live container (this test process stands for its anna) and an orphan.
    const live = await otherInstallations(process.pid, "theirs")
    const orphan = await otherInstallations(999_999, "their-orphan")
    const h = newHome()
    homes.push(h)
    // This installation's own orphan: its anna is killed while a command runs.
    const child = start(h, ["sandbox", "exec", "--image", TEST_IMAGE, "--", "sleep", "600"])
    const closed = finish(child)
    const made = await whenContainers([`${OWNER}=${hostname()}:${child.pid ?? 0}`], (cs) => cs.length > 0)
    const mine = made?.[0]?.Id ?? ""
    assert.notStrictEqual(mine, "", "no sandbox container for the command")
    containers.push(mine)
    child.kill("SIGKILL")
    await closed

    const r = await annaEnv(h, {}, "doctor", "--json")
    const checks = (JSON.parse(r.stdout) as { checks: ReadonlyArray<Check> }).checks
    const lines = checks.filter((c) => c.area === "sandbox" && c.name.startsWith("container ")).map((c) => `${c.name}: ${c.detail}`)
    assert.isTrue(lines.some((l) => l.startsWith(`container ${mine.slice(0, 12)}: `) && l.includes("orphan")), lines.join("\n"))
    for (const id of [live, orphan]) assert.isFalse(lines.some((l) => l.includes(id.slice(0, 12))), `${id.slice(0, 12)} listed:\n${lines.join("\n")}`)
    const others = checks.find((c) => c.area === "sandbox" && c.name === "containers")
    assert.isTrue(others?.ok)
    assert.match(others?.detail ?? "", /\b2 sandbox containers of other anna installations\b/)

    // This installation's next sandbox start removes its own orphan, and leaves the other's alone.
    const ran = await annaEnv(h, {}, "sandbox", "exec", "--image", TEST_IMAGE, "--", "true")
    assert.strictEqual(ran.code, 0, ran.stderr)
    const still = (await docker.listContainers({ all: true, filters: { label: [SANDBOX_LABEL] } })).map((c) => c.Id)
    assert.notInclude(still, mine)
    assert.includeMembers(still, [live, orphan])
  }, 180_000)
})
