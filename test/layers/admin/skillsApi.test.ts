/**
 * `/api/skills` (issue 24) through a real socket: an admin installs as `anna skill install` does — a
 * folder on the gateway's host, a git repository by URL — globally or for an agent, replaces only with
 * `force`, and removes; a relative path and a link are refused. Skills are ranked as
 * `anna skill rank` ranks them. A `user` lists and ranks read-only, and only the skills of agents
 * their access policy opens (their own ranked skills included), without host paths; installing and
 * removing are 403 for them.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { SkillStats } from "../../../src/services/SkillStats.ts"
import { ADMIN, Harness, harnessLayer, USER } from "../../support/adminHarness.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { skillMd } from "../skills/tarballs.ts"

const suite = fakeLlmSuite()
const sources = mkdtempSync(join(tmpdir(), "anna-skill-src-"))
afterAll(() => rmSync(sources, { recursive: true, force: true }))

const skillFolder = (name: string, description: string, folder = name) => {
  const dir = join(sources, folder)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "SKILL.md"), skillMd(name, description))
  return dir
}

interface SkillRow {
  readonly name: string
  readonly description: string
  readonly scope: string
  readonly agent: string | null
  readonly path: string | null
}
interface RankRow {
  readonly rank: number
  readonly name: string
  readonly scope: string
  readonly successes: number
  readonly failures: number
  readonly score: number
}

layer(harnessLayer(), { excludeTestServices: true, timeout: "60 seconds" })("admin API: skills", (it) => {
  it.effect("an admin installs, lists, ranks and removes; a user sees the skills of the agents open to them, read-only", () =>
    Effect.gen(function*() {
      const h = yield* Harness
      yield* Effect.gen(function*() {
        yield* (yield* ProviderStore).add({
          id: "sk", type: "openai", baseUrl: suite.fake.openAiUrl, apiKey: "sk", models: [], defaultModel: "fake-large", headers: {}, enabled: true
        })
        const agents = yield* AgentStore
        yield* agents.create("open", { providerId: "sk" })
        yield* agents.create("closed", { providerId: "sk", access: { kind: "users", users: [ADMIN.user] } })
        const stats = yield* SkillStats
        for (let i = 0; i < 9; i++) yield* stats.record({ agentId: "open", userId: "", name: "pdf-forms" }, "success")
        yield* stats.record({ agentId: "open", userId: "", name: "weather" }, "failure")
        yield* stats.record({ agentId: "open", userId: USER.user, name: "my-notes" }, "success")
        yield* stats.record({ agentId: "open", userId: "bob", name: "bobs-own" }, "success")
      }).pipe(Effect.provide(h.services), Effect.orDie)
      const as = (token: string) => (method: string, path: string, body?: unknown) =>
        Effect.promise(async () => {
          const r = await h.fetch(path, {
            method,
            headers: { ...h.headersOf({ bearer: token }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) })
          })
          const text = await r.text()
          return { status: r.status, body: (text === "" ? null : JSON.parse(text)) as unknown }
        })
      const admin = as(h.adminToken)
      const alice = as(h.userToken)
      const message = (b: unknown) => (b as { error?: { message?: string } } | null)?.error?.message ?? JSON.stringify(b)
      const names = (b: unknown) => (b as ReadonlyArray<SkillRow>).map((s) => `${s.name}@${s.agent ?? "global"}`).sort()

      // Installs: a folder (global), the same name for one agent, a git repository by URL.
      const pdf = yield* admin("POST", "/api/skills", { source: skillFolder("pdf-forms", "Fill in PDF forms.") })
      assert.strictEqual(pdf.status, 200, message(pdf.body))
      assert.deepStrictEqual((pdf.body as ReadonlyArray<SkillRow>).map((s) => [s.name, s.scope, s.agent]), [["pdf-forms", "global", null]])
      assert.include((pdf.body as ReadonlyArray<SkillRow>)[0]?.path ?? "", join(h.home, "skills", "pdf-forms"))
      assert.strictEqual((yield* admin("POST", "/api/skills", { source: skillFolder("weather", "Tell the weather."), agent: "open" })).status, 200)
      assert.strictEqual((yield* admin("POST", "/api/skills", { source: skillFolder("ops-only", "Run the operations.", "ops"), agent: "closed" })).status, 200)
      const repo = join(sources, "repo")
      mkdirSync(join(repo, "skills", "git-notes"), { recursive: true })
      writeFileSync(join(repo, "skills", "git-notes", "SKILL.md"), skillMd("git-notes", "Keep notes in git."))
      const git = (...args: ReadonlyArray<string>) => execFileSync("git", ["-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", ...args], { stdio: "pipe" })
      git("init", "-q")
      git("add", ".")
      git("commit", "-qm", "skills")
      const cloned = yield* admin("POST", "/api/skills", { source: `file://${repo}` })
      assert.strictEqual(cloned.status, 200, message(cloned.body))
      assert.deepStrictEqual(names(cloned.body), ["git-notes@global"])

      // Refusals: a name already installed (unless force), a relative path, a link, an unknown agent.
      const again = yield* admin("POST", "/api/skills", { source: skillFolder("pdf-forms", "Fill in PDF forms, v2.", "pdf2") })
      assert.strictEqual(again.status, 409, message(again.body))
      const forced = yield* admin("POST", "/api/skills", { source: join(sources, "pdf2"), force: true })
      assert.strictEqual((forced.body as ReadonlyArray<SkillRow>)[0]?.description, "Fill in PDF forms, v2.")
      const relative = yield* admin("POST", "/api/skills", { source: "pdf2" })
      assert.deepStrictEqual([relative.status, message(relative.body)], [400, "give an absolute path on the gateway's host, a git URL or a tarball URL"])
      const linked = skillFolder("linked", "Has a link.")
      symlinkSync("/etc/passwd", join(linked, "passwd"))
      const unsafe = yield* admin("POST", "/api/skills", { source: linked })
      assert.strictEqual(unsafe.status, 400)
      assert.include(message(unsafe.body), "refused, nothing installed")
      assert.strictEqual((yield* admin("POST", "/api/skills", { source: linked, agent: "nope" })).status, 404)

      // Lists: every skill for the admin, what an agent sees.
      assert.deepStrictEqual(names((yield* admin("GET", "/api/skills")).body), ["git-notes@global", "ops-only@closed", "pdf-forms@global", "weather@open"])
      assert.deepStrictEqual(names((yield* admin("GET", "/api/skills?agent=open")).body), ["git-notes@global", "pdf-forms@global", "weather@open"])

      // A user: the agents open to them only, and no host path.
      const hers = yield* alice("GET", "/api/skills")
      assert.deepStrictEqual(names(hers.body), ["git-notes@global", "pdf-forms@global", "weather@open"])
      assert.isTrue((hers.body as ReadonlyArray<SkillRow>).every((s) => s.path === null))
      assert.notInclude(JSON.stringify(hers.body), h.home)
      assert.deepStrictEqual(names((yield* alice("GET", "/api/skills?agent=open")).body), ["git-notes@global", "pdf-forms@global", "weather@open"])
      const closed = yield* alice("GET", "/api/skills?agent=closed")
      assert.strictEqual(closed.status, 403)
      assert.notInclude(JSON.stringify(closed.body), "ops-only")

      // Ranks, as `anna skill rank`: by mean, the proven skill first; a user's own ranked skills with theirs.
      const ranked = yield* admin("GET", "/api/skills/rank?agent=open&by=mean")
      assert.deepStrictEqual((ranked.body as ReadonlyArray<RankRow>).map((r) => [r.rank, r.name, r.successes, r.failures]), [
        [1, "pdf-forms", 9, 0],
        [2, "git-notes", 0, 0],
        [3, "weather", 0, 1]
      ])
      const seeded = (yield* admin("GET", "/api/skills/rank?agent=open&seed=7")).body
      assert.deepStrictEqual((yield* admin("GET", "/api/skills/rank?agent=open&seed=7")).body, seeded, "a seed gives the same draws")
      assert.deepStrictEqual(((yield* admin("GET", "/api/skills/rank?agent=open&q=pdf")).body as ReadonlyArray<RankRow>).map((r) => r.name), ["pdf-forms"])
      const herRank = (yield* alice("GET", "/api/skills/rank?agent=open&by=mean")).body as ReadonlyArray<RankRow>
      assert.deepStrictEqual(herRank.map((r) => `${r.name}:${r.scope}`), ["pdf-forms:global", "my-notes:user", "git-notes:global", "weather:agent"])
      assert.notInclude(JSON.stringify(herRank), "bobs-own")
      assert.strictEqual((yield* alice("GET", "/api/skills/rank?agent=open&user=bob")).status, 403)
      assert.strictEqual((yield* alice("GET", "/api/skills/rank?agent=closed")).status, 403)
      assert.strictEqual((yield* alice("GET", "/api/skills/rank")).status, 400)
      assert.include(JSON.stringify((yield* admin("GET", "/api/skills/rank?agent=open&user=bob")).body), "bobs-own")

      // Installing and removing are the operator's.
      assert.strictEqual((yield* alice("POST", "/api/skills", { source: join(sources, "pdf2") })).status, 403)
      assert.strictEqual((yield* alice("DELETE", "/api/skills/pdf-forms")).status, 403)
      const removed = yield* admin("DELETE", "/api/skills/weather?agent=open")
      assert.deepStrictEqual([removed.status, (removed.body as SkillRow).name], [200, "weather"])
      assert.strictEqual((yield* admin("DELETE", "/api/skills/weather?agent=open")).status, 404)
      assert.deepStrictEqual(names((yield* alice("GET", "/api/skills")).body), ["git-notes@global", "pdf-forms@global"])
    }))
})
