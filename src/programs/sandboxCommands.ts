/**
 * `anna sandbox exec` (run a command in a sandbox exactly as the bash tool would) and
 * `anna sandbox build-image` (a local image from a root filesystem, for machines without a registry).
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Agent, isValidId } from "../domain/config/agent.ts"
import { specFor } from "../domain/sandbox/spec.ts"
import { settingValue } from "../domain/config/settings.ts"
import { DEFAULT_IMAGE, diskBoundOf, NETWORK_POLICIES } from "../domain/sandbox/types.ts"
import { SandboxFailure } from "../domain/sandbox/errors.ts"
import * as WorkspaceDisk from "../layers/sandbox/workspaceDisk.ts"
import { busyboxRootfs, findStaticBusybox, importRootfs, makeDocker, nodeIntoRootfs, ping, smokeTest } from "../layers/sandbox/docker/client.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { Sandbox } from "../services/Sandbox.ts"
import { AppConfig } from "../services/AppConfig.ts"
import * as Layers from "./layers.ts"
import { printJson, table, usageError } from "./output.ts"

/** An argument list as one shell command line (each argument quoted unless it is plainly safe). */
export const shellJoin = (args: ReadonlyArray<string>): string =>
  args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`)).join(" ")

/** The agent named, else none (anna's defaults). */
export const agentFor = (id: Option.Option<string>) =>
  Option.isNone(id)
    ? Effect.succeed<Agent | undefined>(undefined)
    : Effect.flatMap(AgentStore, (store) => store.get(id.value))

const exec = Command.make("exec", {
  agent: Flag.String("agent").pipe(Flag.withDescription("Use this agent's sandbox settings and workspace"), Flag.optional),
  user: Flag.String("user").pipe(
    Flag.withDescription("Use this user's workspace of the agent (default: the agent's shared workspace)"),
    Flag.filter((u) => isValidId(u), () => "--user takes a user id (letters, digits, '.', '_', '-')"),
    Flag.optional
  ),
  image: Flag.String("image").pipe(Flag.withDescription("Image for this run (default: the agent's, else anna-sandbox:latest)"), Flag.optional),
  network: Flag.Literals("network", NETWORK_POLICIES).pipe(Flag.withDescription("Network policy for this run"), Flag.optional),
  timeout: Flag.Int("timeout").pipe(
    Flag.withDescription("Seconds before the command and its children are killed (default 120)"),
    Flag.filter((n) => n > 0 && n <= 86_400, () => "--timeout must be between 1 and 86400 seconds"),
    Flag.optional
  ),
  command: Argument.String("command").pipe(Argument.withDescription("The command and its arguments, after --"), Argument.variadic({ min: 1 }))
}, (f) =>
  Effect.gen(function*() {
    const agent = yield* agentFor(f.agent)
    const spec = specFor((yield* AppConfig).workspaces, agent, {
      image: Option.getOrUndefined(f.image),
      network: Option.getOrUndefined(f.network),
      userId: Option.getOrUndefined(f.user)
    })
    const bound = settingValue("sandbox.disk_bound", Option.getOrUndefined(yield* (yield* ConfigStore).getSetting("sandbox.disk_bound")))
    const result = yield* Effect.scoped(Effect.gen(function*() {
      const session = yield* (yield* Sandbox).start(spec, { diskBound: diskBoundOf(bound) })
      return yield* session.exec(shellJoin(f.command), { timeoutMs: Option.getOrElse(f.timeout, () => 120) * 1000 })
    }))
    process.stdout.write(result.stdout)
    process.stderr.write(result.stderr)
    if (result.stdoutDropped + result.stderrDropped > 0) {
      process.stderr.write(`[anna: ${result.stdoutDropped + result.stderrDropped} bytes of output dropped]\n`)
    }
    if (result.timedOut) process.stderr.write(`[anna: timed out; the command and its children were killed]\n`)
    process.exitCode = result.timedOut ? 124 : result.exitCode
  }).pipe(Effect.provide(Layers.Sandbox))).pipe(
    Command.withDescription("Run a command in a sandbox exactly as the bash tool would; exits with its exit code (124 on timeout)"),
    Command.provide(Layers.Stores),
    Command.withExamples([
      { command: "anna sandbox exec -- hostname", description: "The container's hostname, not the host's" },
      { command: "anna sandbox exec --agent default -- ls /workspace", description: "The agent's shared workspace" },
      { command: "anna sandbox exec --agent default --user alice -- ls /workspace", description: "Alice's workspace of that agent" }
    ])
  )

const buildImage = Command.make("build-image", {
  rootfs: Flag.String("rootfs").pipe(Flag.withDescription("A root filesystem: a folder (e.g. from debootstrap) or a .tar file"), Flag.optional),
  busybox: Flag.String("busybox").pipe(
    Flag.withDescription("Build a minimal rootfs around this statically linked busybox (e.g. /bin/busybox from busybox-static)"),
    Flag.optional
  ),
  node: Flag.String("node").pipe(
    Flag.withDescription("Also copy this (dynamically linked) Node binary, its shared libraries and loader into the image, as /usr/local/bin/node (for stdio MCP servers)"),
    Flag.optional
  ),
  tag: Flag.String("tag").pipe(Flag.withDescription(`Image tag (default ${DEFAULT_IMAGE})`), Flag.withDefault(DEFAULT_IMAGE))
}, (f) =>
  Effect.gen(function*() {
    if (Option.isSome(f.node) && Option.isSome(f.rootfs)) {
      return yield* usageError(["anna", "sandbox", "build-image"], "--node adds Node to a busybox image; with --rootfs, put Node into the root filesystem yourself")
    }
    if (Option.isSome(f.rootfs) && Option.isSome(f.busybox)) {
      return yield* usageError(["anna", "sandbox", "build-image"], "give at most one of --rootfs <folder-or-tar> and --busybox <path>")
    }
    // Neither: the static busybox this machine has (Debian/Ubuntu: the busybox-static package).
    let busybox = Option.getOrUndefined(f.busybox)
    if (busybox === undefined && Option.isNone(f.rootfs)) {
      const search = findStaticBusybox(process.env.PATH ?? "")
      if (search.found === undefined) {
        return yield* usageError(
          ["anna", "sandbox", "build-image"],
          `no statically linked busybox on PATH${search.passed.length === 0 ? "" : ` (${search.passed.join(", ")})`}: install one (Debian/Ubuntu: sudo apt-get install busybox-static) and run this again, or give --busybox PATH or --rootfs DIR-OR-TAR`
        )
      }
      busybox = search.found
      yield* Console.error(`Using the static busybox at ${busybox}.`)
    }
    const docker = yield* makeDocker(600_000)
    yield* ping(docker)
    if (busybox !== undefined) {
      const dir = mkdtempSync(join(tmpdir(), "anna-rootfs-"))
      yield* Effect.ensuring(
        busyboxRootfs(busybox, dir).pipe(
          Effect.andThen(Option.isSome(f.node) ? nodeIntoRootfs(f.node.value, dir) : Effect.void),
          Effect.andThen(importRootfs(docker, dir, f.tag))
        ),
        Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
    } else if (Option.isSome(f.rootfs)) {
      yield* importRootfs(docker, f.rootfs.value, f.tag)
    }
    yield* smokeTest(docker, f.tag)
    yield* Console.log(`Built image ${f.tag}; /bin/sh runs in it${Option.isSome(f.node) ? " (and /usr/local/bin/node)" : ""}.`)
  })).pipe(Command.withDescription(
  "Build a local sandbox image (docker import; no registry needed): from a root filesystem, a static busybox, or — with neither flag — the static busybox found on PATH (Debian/Ubuntu: apt-get install busybox-static)"
))

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

const disks = Command.make("disks", { json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false)) }, (f) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const found = yield* Effect.promise(() => WorkspaceDisk.list(config.workspaces))
    const tools = yield* Effect.promise(() => WorkspaceDisk.mountTools())
    const canMount = typeof tools !== "string"
    if (f.json) return yield* printJson({ canMount, why: canMount ? null : tools, disks: found })
    yield* Console.log(canMount ? "This process can give workspaces their own filesystems." : `Workspaces get no filesystem of their own here: ${tools}.`)
    if (found.length === 0) return yield* Console.log("No workspace has a filesystem of its own yet.")
    yield* Console.log(table(
      ["WORKSPACE", "SIZE", "ON HOST", "USED", "MOUNTED"],
      found.map((d) => [d.workspace, mib(d.bytes), mib(d.allocated), d.used === undefined ? "-" : mib(d.used), d.mounted ? "yes" : "no"])
    ))
  })).pipe(Command.provide(Layers.AppConfigLive), Command.withDescription(
    "List the workspaces that are filesystems of their own (sandbox.disk_bound): each one's size (its quota, a hard bound), what it takes on the host, what is used, whether it is mounted"
  ))

const unmount = Command.make("unmount", { json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false)) }, (f) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const done = yield* Effect.tryPromise({
      try: () => WorkspaceDisk.detachUnder(config.workspaces),
      catch: (e) => new SandboxFailure({ operation: "unmount workspaces", detail: e instanceof Error ? e.message : String(e) })
    })
    if (f.json) return yield* printJson({ unmounted: done })
    yield* Console.log(done.length === 0 ? "No workspace filesystem was mounted." : `Unmounted ${done.length} workspace filesystem(s); each is mounted again when it is next used.`)
  })).pipe(Command.provide(Layers.AppConfigLive), Command.withDescription(
    "Unmount every workspace filesystem under $ANNA_HOME (e.g. before moving or deleting it); a running gateway mounts each again at its next use, and live containers keep theirs"
  ))

export const sandboxCommand = Command.make("sandbox").pipe(
  Command.withDescription("The Docker sandbox: exec, build-image, disks, unmount"),
  Command.withSubcommands([exec, buildImage, disks, unmount])
)
