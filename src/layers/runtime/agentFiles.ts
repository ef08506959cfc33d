/**
 * The operator's files of an agent — SYSTEM.md, SOUL.md and the presets in `agents/*.md` of
 * `$ANNA_HOME/workspaces/{agent}/` (never mounted into a sandbox) — read once and kept until they
 * change, so a turn reads no file. Changes are noticed with a non-recursive watch on the agent's
 * folder and on its `agents/` folder (an editor's save, a new preset, a removed file); a folder that
 * does not exist yet is noticed through its parent. Only these two folders are watched: the users'
 * workspaces inside the agent's folder are not, so what sandboxed code does there costs nothing here.
 *
 * Where a watch cannot be set up (no inotify left, an unusual filesystem), the files are read on
 * every turn instead, with one warning: slower, never stale. With PollFiles set (a cluster, whose
 * workspaces are a shared volume) nothing is watched: what was read is kept that long.
 */
import { Clock, Effect, Scope } from "effect"
import { existsSync, type FSWatcher, watch } from "node:fs"
import { dirname, join } from "node:path"
import { PollFiles } from "../../domain/config/filePolling.ts"
import { readSmallFile } from "./smallFile.ts"
import { folderSource, loadPresets, type Preset } from "./presets.ts"

/** SYSTEM.md and SOUL.md larger than this are ignored (with a warning). */
export const MAX_PROMPT_FILE_BYTES = 256 * 1024

export interface AgentFiles {
  readonly systemMd: string | undefined
  readonly soulMd: string | undefined
  /** The operator's presets (workspace presets are the runner's, see SessionPool). */
  readonly presets: ReadonlyArray<Preset>
}

interface Entry {
  value: AgentFiles | undefined
  /** Moves on with every change seen, so a read that overlapped a change is not kept. */
  generation: number
  readonly watchers: Array<FSWatcher>
  /** Watching failed: read every time. */
  unwatched: boolean
  /** When `value` was read (polling mode). */
  readAt: number
}

const read = (folder: string) =>
  Effect.gen(function*() {
    const systemMd = yield* Effect.promise(() => readSmallFile(join(folder, "SYSTEM.md"), MAX_PROMPT_FILE_BYTES))
    const soulMd = yield* Effect.promise(() => readSmallFile(join(folder, "SOUL.md"), MAX_PROMPT_FILE_BYTES))
    const presets = yield* loadPresets([folderSource(join(folder, "agents"))])
    const files: AgentFiles = { systemMd, soulMd, presets }
    return files
  })

/**
 * A cache of agents' files, living in the caller's scope (the watches are closed with it). `files`
 * gives a folder's current files; `reads` counts the times they were read from disk (for tests and
 * diagnostics).
 */
export const make = Effect.gen(function*() {
  const entries = new Map<string, Entry>()
  let reads = 0
  const poll = yield* PollFiles

  const closeAll = (entry: Entry) => {
    for (const w of entry.watchers.splice(0)) w.close()
  }
  yield* Scope.addFinalizer(yield* Effect.scope, Effect.sync(() => entries.forEach(closeAll)))

  /** Watches `dir` (or, when it is missing, the nearest existing parent); any event drops the cached value. */
  const watchDir = (entry: Entry, dir: string): boolean => {
    let target = dir
    while (!existsSync(target)) {
      const parent = dirname(target)
      if (parent === target) return false
      target = parent
    }
    try {
      const watcher = watch(target, { persistent: false }, () => {
        entry.value = undefined
        entry.generation++
      })
      watcher.on("error", () => {
        entry.value = undefined
        entry.unwatched = true
        closeAll(entry)
      })
      entry.watchers.push(watcher)
      return true
    } catch {
      return false
    }
  }

  const arm = (folder: string, entry: Entry) =>
    Effect.gen(function*() {
      closeAll(entry)
      const ok = watchDir(entry, folder) && watchDir(entry, join(folder, "agents"))
      if (!ok) {
        entry.unwatched = true
        closeAll(entry)
        yield* Effect.logWarning(`agent files: cannot watch ${folder}; SYSTEM.md, SOUL.md and presets are read on every turn`)
      }
    })

  const files = (folder: string) =>
    Effect.gen(function*() {
      let entry = entries.get(folder)
      if (entry === undefined) {
        entry = { value: undefined, generation: 0, watchers: [], unwatched: false, readAt: 0 }
        entries.set(folder, entry)
      }
      if (poll !== undefined) {
        const now = yield* Clock.currentTimeMillis
        if (entry.value !== undefined && now - entry.readAt < poll) return entry.value
        reads++
        entry.value = yield* read(folder)
        entry.readAt = now
        return entry.value
      }
      if (entry.value !== undefined && !entry.unwatched) return entry.value
      // Watch before reading (again: the folder may have appeared), so a change made while reading is seen.
      if (!entry.unwatched) yield* arm(folder, entry)
      const generation = entry.generation
      reads++
      const value = yield* read(folder)
      if (!entry.unwatched && entry.generation === generation) entry.value = value
      return value
    }).pipe(Effect.withSpan("AgentFiles.files"))

  return { files, reads: Effect.sync(() => reads) }
})

export type AgentFilesCache = Effect.Success<typeof make>
