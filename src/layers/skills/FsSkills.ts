/**
 * Skills on the host: global ones in `$ANNA_HOME/skills/`, an agent's own in
 * `$ANNA_HOME/workspaces/<agent>/skills/` (see services/Skills.ts).
 *
 * The list the system prompt shows is cached per agent until something changes: non-recursive
 * watches on the two skills folders (or, while one is missing, on its nearest existing parent for
 * that folder's appearance only) and on each installed skill's folder drop every cached list on any
 * event, so a turn reads no file when nothing changed. Where a watch cannot be set up, the folders are read every time (one warning).
 * With PollFiles set (a cluster, whose `$ANNA_HOME` folders are shared) nothing is watched: a list is kept that long.
 */
import { Clock, Effect, Layer, Option, Scope } from "effect"
import { existsSync, type FSWatcher, promises as fs, watch } from "node:fs"
import { basename, dirname, join } from "node:path"
import { SkillExists, SkillNotFound } from "../../domain/skills/errors.ts"
import { nameProblem, packagesIn, type SkillMeta } from "../../domain/skills/skill.ts"
import { AppConfig } from "../../services/AppConfig.ts"
import { PollFiles } from "../../domain/config/filePolling.ts"
import { type InstalledSkill, Skills } from "../../services/Skills.ts"
import { exists, type FolderSkill, otherFiles, skillsIn, writeSkill } from "./installed.ts"
import { readSource } from "./sources.ts"

export const agentRoot = (workspaces: string, agentId: string) => join(workspaces, agentId, "skills")

export const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const poll = yield* PollFiles
  const polled = new Map<string, { readonly value: ReadonlyArray<SkillMeta>; readonly readAt: number }>()
  const global = config.skills
  const own = (agentId: string) => agentRoot(config.workspaces, agentId)
  const scopeName = (agentId: string | undefined) => (agentId === undefined ? "global" : `agent ${agentId}`)

  const tag = (agentId: string | undefined) => (s: FolderSkill): InstalledSkill => ({
    name: s.name,
    description: s.description,
    scope: agentId === undefined ? "global" : "agent",
    ...(agentId === undefined ? {} : { agentId }),
    path: s.path
  })

  const visible = Effect.fn("Skills.visible")(function*(agentId: string) {
    const mine = (yield* skillsIn(own(agentId))).map(tag(agentId))
    const shared = (yield* skillsIn(global)).map(tag(undefined)).filter((g) => !mine.some((m) => m.name === g.name))
    return [...mine, ...shared].sort((a, b) => a.name.localeCompare(b.name)) as ReadonlyArray<InstalledSkill>
  })

  const list = (agentId?: string) => agentId === undefined ? skillsIn(global).pipe(Effect.map((s) => s.map(tag(undefined)))) : visible(agentId)

  const all = Effect.gen(function*() {
    const agents = yield* Effect.promise(() => fs.readdir(config.workspaces).catch(() => [] as Array<string>))
    const out: Array<InstalledSkill> = [...(yield* skillsIn(global)).map(tag(undefined))]
    for (const agentId of agents.sort()) out.push(...(yield* skillsIn(own(agentId))).map(tag(agentId)))
    return out as ReadonlyArray<InstalledSkill>
  }).pipe(Effect.withSpan("Skills.all"))

  const install = Effect.fn("Skills.install")(function*(source: string, options: { readonly agentId?: string | undefined; readonly force: boolean }) {
    const root = options.agentId === undefined ? global : own(options.agentId)
    const files = yield* readSource(source)
    const packages = yield* packagesIn(files, source)
    if (!options.force) {
      for (const p of packages) if (yield* exists(join(root, p.name))) return yield* new SkillExists({ name: p.name, scope: scopeName(options.agentId) })
    }
    const out: Array<InstalledSkill> = []
    for (const p of packages) {
      const path = yield* writeSkill(root, p, options.force)
      out.push({ ...tag(options.agentId)({ ...p, path }) })
      yield* Effect.logInfo(`skills: installed ${p.name} (${scopeName(options.agentId)}) from ${source}`)
    }
    invalidate()
    return out as ReadonlyArray<InstalledSkill>
  })

  const remove = Effect.fn("Skills.remove")(function*(name: string, agentId?: string) {
    const root = agentId === undefined ? global : own(agentId)
    const found = nameProblem(name) === undefined ? (yield* skillsIn(root)).find((s) => s.name === name) : undefined
    if (found === undefined) return yield* new SkillNotFound({ name, scope: scopeName(agentId) })
    const gone = join(root, `.remove-${name}-${Date.now()}`)
    yield* Effect.promise(() => fs.rename(found.path, gone).then(() => fs.rm(gone, { recursive: true, force: true })))
    invalidate()
    return tag(agentId)(found)
  })

  const read = Effect.fn("Skills.read")(function*(name: string, agentId: string) {
    const skill = (yield* visible(agentId)).find((s) => s.name === name)
    if (skill === undefined) return yield* new SkillNotFound({ name, scope: `agent ${agentId} and global` })
    const text = (yield* skillsIn(dirname(skill.path))).find((s) => s.name === name)
    if (text === undefined) return yield* new SkillNotFound({ name, scope: scopeName(skill.agentId) })
    return { skill, body: text.body, files: yield* otherFiles(skill.path) }
  })

  // The prompt's cache: lists by agent, dropped by any watched change.
  const cached = new Map<string, { readonly value: ReadonlyArray<SkillMeta>; readonly generation: number }>()
  const watchers = new Map<string, FSWatcher>()
  let generation = 0
  let unwatched = false
  let reads = 0
  const invalidate = () => {
    generation++
    cached.clear()
    polled.clear()
  }
  yield* Scope.addFinalizer(yield* Effect.scope, Effect.sync(() => {
    for (const w of watchers.values()) w.close()
  }))

  /**
   * Watches `dir`, or — while it is missing — its nearest existing parent for the appearance of the
   * next folder on the way (other changes there, such as the database next to `$ANNA_HOME/skills`,
   * are ignored); false when watching fails.
   */
  const watchDir = (dir: string): boolean => {
    let target = dir
    let toward: string | undefined
    while (!existsSync(target)) {
      const parent = dirname(target)
      if (parent === target) return false
      toward = basename(target)
      target = parent
    }
    const key = toward === undefined ? target : join(target, toward)
    if (watchers.has(key)) return true
    try {
      // A watch fires once: the lists are dropped and the next read watches again (a folder replaced
      // by a new install is then watched, not its removed predecessor).
      const fired = (_event?: unknown, filename?: string | Buffer | null) => {
        if (toward !== undefined && typeof filename === "string" && filename !== toward) return
        watcher.close()
        if (watchers.get(key) === watcher) watchers.delete(key)
        invalidate()
      }
      const watcher = watch(target, { persistent: false }, fired)
      watcher.on("error", () => fired())
      watchers.set(key, watcher)
      return true
    } catch {
      return false
    }
  }

  const forPrompt = Effect.fn("Skills.forPrompt")(function*(agentId: string) {
    if (poll !== undefined) {
      const now = yield* Clock.currentTimeMillis
      const kept = polled.get(agentId)
      if (kept !== undefined && now - kept.readAt < poll) return kept.value
      const value = (yield* visible(agentId)).map((s): SkillMeta => ({ name: s.name, description: s.description }))
      polled.set(agentId, { value, readAt: now })
      reads++
      return value as ReadonlyArray<SkillMeta>
    }
    const hit = cached.get(agentId)
    if (hit !== undefined && hit.generation === generation && !unwatched) return hit.value
    const before = generation
    // Watch before reading, so a change made while reading is seen.
    if (!unwatched && !(watchDir(global) && watchDir(own(agentId)))) {
      unwatched = true
      yield* Effect.logWarning("skills: cannot watch the skills folders; they are read on every turn")
    }
    const skills = yield* visible(agentId)
    if (!unwatched) for (const s of skills) watchDir(s.path)
    const value = skills.map((s): SkillMeta => ({ name: s.name, description: s.description }))
    if (!unwatched && generation === before) cached.set(agentId, { value, generation })
    reads++
    return value as ReadonlyArray<SkillMeta>
  })

  return Object.assign(Skills.of({ install, list, all, remove, read, forPrompt }), { reads: Effect.sync(() => reads) })
})

export const layer = Layer.effect(Skills, make)

/**
 * Skills where the composition has an AppConfig (the CLI and the gateway always do); without one
 * (a bare runtime in a test), no skills: nothing listed, nothing installable.
 */
export const layerIfConfigured = Layer.effect(
  Skills,
  Effect.gen(function*() {
    const config = yield* Effect.serviceOption(AppConfig)
    if (Option.isSome(config)) return yield* make.pipe(Effect.provideService(AppConfig, config.value))
    const none = (name: string) => new SkillNotFound({ name, scope: "no skills in this deployment" })
    return Skills.of({
      install: (source) => Effect.fail(none(source)),
      list: () => Effect.succeed([]),
      all: Effect.succeed([]),
      remove: (name) => Effect.fail(none(name)),
      read: (name) => Effect.fail(none(name)),
      forPrompt: () => Effect.succeed([])
    })
  })
)
