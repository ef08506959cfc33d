/**
 * Run by tarballMemory.test.ts in a child process (`node --expose-gc tarballMemory.child.ts MODE
 * ARCHIVE`), so the resident memory measured is this process's alone and a blow-up cannot take the
 * test worker down. It unpacks a small valid archive first (modules loaded, code warmed up), resets
 * the kernel's high-water mark (`5` to /proc/self/clear_refs), unpacks ARCHIVE once, and prints
 * `{ baselineKiB, peakKiB, heldBytes, outcome }`: the resident size at the reset, the highest
 * resident size since (VmHWM, kept by the kernel: nothing is sampled, nothing missed), and the
 * buffers still held after the unpack and a full collection, while the refusal is still referenced.
 *
 * MODE: `tarball` (readTarball on the archive's bytes, as the operator's limits), `chat` (the
 * `skills` tool's install on the archive in a user's workspace, through a local sandbox session),
 * `operator` (`anna skill install FILE`: the operator's Skills service on the archive's path).
 */
import { Effect } from "effect"
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import * as FsSkills from "../../../src/layers/skills/FsSkills.ts"
import { readTarball } from "../../../src/layers/skills/tarball.ts"
import { skillsTool } from "../../../src/layers/tools/skills.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { skillMd, tarball } from "./tarballs.ts"

const [mode = "", archive = ""] = process.argv.slice(2)

const status = (field: string): number => {
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith(`${field}:`))
  return Number(line?.replace(/\D+/g, "") ?? Number.NaN)
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)

interface Outcome {
  /** `ok: …` or `refused: <message>` (cut short: a path of 1 MB would otherwise be printed whole). */
  readonly text: string
  /** The refusal itself, kept until memory is measured, as a log line or a trace may keep it. */
  readonly error?: unknown
}

const refused = (error: unknown): Effect.Effect<Outcome> =>
  Effect.succeed({ text: `refused: ${String((error as { message?: string }).message ?? error).slice(0, 500)}`, error })

const program = Effect.gen(function*() {
  const home = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-tarball-memory-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
  const skills = yield* FsSkills.make.pipe(Effect.provide(AppConfig.at(home)))
  const workspace = join(home, "workspace")
  mkdirSync(workspace)
  const session = yield* LocalSandbox.make({ workspace })
  const tool = skillsTool(skills, { agentId: "a", userId: "u", sessionKey: "a:cli:u:dm", enabled: () => true, sandbox: Effect.succeed(session) })
  const warm = join(home, "warm.tgz")
  writeFileSync(warm, tarball([{ path: "SKILL.md", text: skillMd("warm") }]))

  const once = (path: string, force: boolean): Effect.Effect<Outcome> => {
    switch (mode) {
      case "tarball":
        return readTarball(readFileSync(path), path).pipe(Effect.map((files) => ({ text: `ok: ${files.length} files` })), Effect.catch(refused))
      case "chat": {
        const name = basename(path)
        copyFileSync(path, join(session.spec.workspace, name))
        return tool.execute({ action: "install", path: name, force }, { sessionKey: "a:cli:u:dm", userId: "u", agentId: "a" }).pipe(
          Effect.map((text) => ({ text: `ok: ${text}` })),
          Effect.catch(refused)
        )
      }
      case "operator":
        return skills.install(path, { force }).pipe(
          Effect.map((installed) => ({ text: `ok: ${installed.map((s) => s.name).join(", ")}` })),
          Effect.catch(refused)
        )
      default:
        return Effect.die(new Error(`unknown mode ${mode}`))
    }
  }

  const warmed = yield* once(warm, true)
  if (!warmed.text.startsWith("ok")) return yield* Effect.die(new Error(`the warm-up failed: ${warmed.text}`))
  gc()
  const baselineBuffers = process.memoryUsage().arrayBuffers
  const baselineKiB = status("VmRSS")
  writeFileSync("/proc/self/clear_refs", "5")
  const outcome = yield* once(archive, false)
  const peakKiB = status("VmHWM")
  // Twice: the first collection frees the buffers, the second finishes sweeping them (V8 sweeps
  // array buffers concurrently).
  gc()
  gc()
  const heldBytes = process.memoryUsage().arrayBuffers - baselineBuffers
  const report = { baselineKiB, peakKiB, heldBytes, outcome: outcome.text, error: (outcome.error as { _tag?: string } | undefined)?._tag }
  process.stdout.write(`${JSON.stringify(report)}\n`)
})

Effect.runPromise(Effect.scoped(program)).catch((e: unknown) => {
  process.stderr.write(`${String(e)}\n`)
  process.exitCode = 1
})
