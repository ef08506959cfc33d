/**
 * `anna doctor`: checks the database (and that it and ANNA_HOME are private to their owner), the
 * Docker sandbox (engine, image, network policy), the providers and the channels (the HTTP channel
 * where the running gateway published that it listens, else at its configured address), and says
 * what to fix. Exits 1 when something needs fixing. Nothing it prints carries a provider's credentials.
 */
import { Console, Duration, Effect, Option, Result, Schema } from "effect"
import { connect } from "node:net"
import { Command, Flag } from "effect/cli"
import { settingValue } from "../domain/config/settings.ts"
import { specFor } from "../domain/sandbox/spec.ts"
import { containerChecks, diagnose, type DoctorCheck, installationOf, makeDocker, sandboxContainers } from "../layers/sandbox/docker/client.ts"
import { providerSecrets, redactSecrets } from "../domain/model/types.ts"
import { DEFAULT_HOST, DEFAULT_PORT } from "../layers/channels/HttpChannel.ts"
import { loadPlatform } from "../layers/channels/platforms.ts"
import { mountTools } from "../layers/sandbox/workspaceDisk.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { PluginStore } from "../services/PluginStore.ts"
import { ProviderRegistry } from "../services/ProviderRegistry.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import { databaseLocation, type LoosePath, loosePermissions } from "./env.ts"
import { postgresDoctor } from "./doctorPostgres.ts"
import { type Published, runningGateway } from "./gatewayPresence.ts"
import { printJson } from "./output.ts"
import { AppConfigLive, StoresWithMemory } from "./layers.ts"

export class DoctorFound extends Schema.TaggedError<DoctorFound>()("DoctorFound", { problems: Schema.Number }) {
  override get message() {
    return `doctor found ${this.problems} thing(s) to fix`
  }
}

/** A path as the shell takes it in a suggested command. */
const shellPath = (path: string): string => (/^[\w./~@%+,:=-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`)

/** The fix for one loose path of anna's state. */
const permissionCheck = (home: string, p: LoosePath): DoctorCheck => ({
  name: p.path === home ? "home" : p.path.startsWith(`${home}/`) ? p.path.slice(home.length + 1) : p.path,
  ok: false,
  detail: `${p.path} has mode ${p.mode.toString(8).padStart(4, "0")}: others may read provider keys or conversations`,
  fix: `chmod ${p.want.toString(8)} ${shellPath(p.path)}${p.path === home ? " (or set ANNA_HOME to a folder of anna's own)" : ""}`
})

/** Whether something accepts connections on host:port now (a wildcard address is tried on loopback). */
const listening = (host: string, port: number) =>
  Effect.callback<boolean>((resume) => {
    const target = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host
    const socket = connect({ host: target, port })
    const settle = (ok: boolean) => {
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    socket.once("connect", () => settle(true))
    socket.once("error", () => settle(false))
    return Effect.sync(() => socket.destroy())
  }).pipe(Effect.timeoutOption(Duration.seconds(2)), Effect.map((o) => Option.getOrElse(o, () => false)))

/**
 * The HTTP channel of the running gateway, where it published that it listens (which may not be the
 * configured address: `anna gateway --port`, port 0).
 */
const servedCheck = (gateway: Published) =>
  Effect.gen(function*() {
    const by = `the running gateway, pid ${gateway.pid}`
    if (gateway.host === null || gateway.port === null) {
      return {
        name: "http",
        ok: false,
        detail: `enabled, but ${by} does not serve it now`,
        fix: "its log says why (e.g. the port is taken): anna channel set http --config port=PORT, or restart the gateway"
      } satisfies DoctorCheck
    }
    const where = `on ${gateway.host}:${gateway.port}`
    return (yield* listening(gateway.host, gateway.port))
      ? { name: "http", ok: true, detail: `enabled, OpenAI-compatible API ${where}: listening (served by ${by})` } satisfies DoctorCheck
      : { name: "http", ok: false, detail: `enabled, OpenAI-compatible API ${where}: ${by} serves it, but nothing answers there`, fix: "see the gateway's log; restart it if it hangs" } satisfies DoctorCheck
  })

/** A chat platform's credentials and address, asked of the platform (15 s at most). */
const platformCheck = (id: string, config: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const platform = yield* loadPlatform(id)
    if (platform === undefined) return { name: id, ok: true, detail: "enabled" }
    const checked = yield* platform.check(config).pipe(
      Effect.timeoutOption(Duration.seconds(15)),
      Effect.map(Option.match({ onNone: () => Result.fail(`no answer from ${id} within 15 s`), onSome: Result.succeed })),
      Effect.catch((problem) => Effect.succeed(Result.fail(problem)))
    )
    return Result.match(checked, {
      onSuccess: (detail): DoctorCheck => ({ name: id, ok: true, detail: `enabled, ${detail}` }),
      onFailure: (problem): DoctorCheck => ({ name: id, ok: false, detail: problem, fix: platform.fix })
    })
  })

/** How workspaces' disk quotas are held here (the setting sandbox.disk_bound and whether this process can mount). */
const diskCheck = (stored: Option.Option<string>, quotaMb: number) =>
  Effect.promise(async (): Promise<DoctorCheck> => {
    const setting = settingValue("sandbox.disk_bound", Option.getOrUndefined(stored))
    const tools = await mountTools()
    const name = "workspace disk"
    if (setting === "quota") {
      return { name, ok: true, detail: `sandbox.disk_bound is quota: the ${quotaMb} MiB quota is a soft check (see README, Security)` }
    }
    if (typeof tools !== "string") {
      return { name, ok: true, detail: `each workspace is a filesystem of its own, of the quota's size (${quotaMb} MiB): a hard bound (anna sandbox disks lists them)` }
    }
    return setting === "filesystem"
      ? { name, ok: false, detail: `sandbox.disk_bound is filesystem, but ${tools}: sandboxed tools are off`, fix: "run anna as root with e2fsprogs installed, or anna settings set sandbox.disk_bound auto" }
      : { name, ok: true, detail: `the ${quotaMb} MiB quota is a soft check, not a bound: ${tools} (for a hard bound run anna as root with e2fsprogs; README, Security)` }
  })

export const doctorCommand = Command.make("doctor", {
  agent: Flag.String("agent").pipe(Flag.withDescription("Check this agent's sandbox settings (default: the default agent)"), Flag.optional),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
}, (f) =>
  Effect.gen(function*() {
    const checks: Array<DoctorCheck & { readonly area: string }> = []
    const add = (area: string, c: DoctorCheck) => checks.push({ area, ...c })
    const report = Effect.gen(function*() {
      const failed = checks.filter((c) => !c.ok)
      if (f.json) yield* printJson({ ok: failed.length === 0, checks })
      else {
        for (const c of checks) {
          yield* Console.log(`${c.ok ? "ok  " : "FIX "} ${c.area}/${c.name}: ${c.detail}`)
          if (!c.ok && c.fix !== undefined) yield* Console.log(`     → ${c.fix}`)
        }
      }
      if (failed.length > 0) return yield* new DoctorFound({ problems: failed.length })
    })

    // PostgreSQL is checked on a connection of its own first: a server that does not answer is a
    // finding (the rest needs the database), not a failure to start.
    const where = yield* databaseLocation
    if (where._tag === "Postgres") {
      const pg = yield* postgresDoctor(where)
      for (const c of pg.checks) add("database", c)
      if (!pg.reachable) return yield* report
    }
    return yield* Effect.gen(function*() {
      const sessions = yield* (yield* MemoryStore).listConversations({})
      const memoryPlugin = yield* (yield* PluginStore).enabledMemory
      const app = yield* AppConfig
      add(
        "database",
        where._tag === "Sqlite"
          ? { name: "anna.db", ok: true, detail: `SQLite ${where.path}: migrated, ${sessions.length} session(s), memory plugin ${memoryPlugin}` }
          : { name: "state", ok: true, detail: `PostgreSQL ${where.masked}: migrated, ${sessions.length} session(s), memory plugin ${memoryPlugin}` }
      )
      const home = app.home
      const loose = loosePermissions(home, where._tag === "Sqlite", app.workspaces)
      for (const p of loose) add("permissions", permissionCheck(home, p))
      if (loose.length === 0) {
        add("permissions", { name: "home", ok: true, detail: where._tag === "Sqlite" ? `${home} and the database files are private to their owner` : `${home} is private to its owner` })
      }

      const agents = yield* AgentStore
      const agent = Option.isSome(f.agent) ? yield* agents.get(f.agent.value) : Option.getOrUndefined(yield* agents.defaultAgent)
      const spec = specFor(app.workspaces, agent)
      const sandboxChecks = yield* diagnose(yield* makeDocker(10_000), spec.image, spec.network)
      for (const c of sandboxChecks) {
        add("sandbox", { ...c, name: `${c.name}${c.name === "docker" ? "" : ` (agent ${spec.agentId})`}` })
      }
      add("sandbox", yield* diskCheck(yield* (yield* ConfigStore).getSetting("sandbox.disk_bound"), spec.limits.diskMb))
      // Containers left behind (e.g. after a SIGKILL of the gateway); not asked when the engine did not answer.
      if (sandboxChecks.some((c) => c.name === "docker" && c.ok)) {
        const containers = yield* sandboxContainers(yield* makeDocker(10_000), undefined, installationOf(home)).pipe(Effect.orElseSucceed(() => []))
        for (const c of containerChecks(containers)) add("sandbox", c)
      }

      const providers = (yield* (yield* ProviderStore).list).filter((p) => p.enabled)
      if (providers.length === 0) {
        add("providers", { name: "providers", ok: false, detail: "no enabled provider", fix: "anna onboard --from-env (with ANTHROPIC_API_KEY or OPENAI_API_KEY set), or anna provider add" })
      }
      const registry = yield* ProviderRegistry
      for (const p of providers) {
        const listed = yield* registry.client(p.id).pipe(
          Effect.flatMap((c) => c.listModels),
          Effect.timeoutOption(Duration.seconds(15)),
          Effect.result
        )
        add(
          "providers",
          listed._tag === "Success" && Option.isSome(listed.success)
            ? { name: p.id, ok: true, detail: `${p.type}: ${listed.success.value.length} model(s) listed, default ${p.defaultModel}` }
            : {
              name: p.id,
              ok: false,
              detail: listed._tag === "Failure" ? redactSecrets(listed.failure.message, providerSecrets(p)) : "no answer within 15 s",
              fix: `check the key and base URL (anna provider list), or remove it (anna provider remove ${p.id})`
            }
        )
      }
      const channels = (yield* (yield* ConfigStore).listChannels).filter((c) => c.enabled)
      if (channels.length === 0) {
        add("channels", { name: "channels", ok: true, detail: "none enabled: anna chat works; anna channel enable http serves the OpenAI-compatible API" })
      }
      for (const c of channels) {
        if (c.id !== "http") {
          add("channels", yield* platformCheck(c.id, c.config))
          continue
        }
        const gateway = yield* runningGateway(home)
        if (Option.isSome(gateway)) {
          add("channels", yield* servedCheck(gateway.value))
          continue
        }
        const host = typeof c.config.host === "string" ? c.config.host : DEFAULT_HOST
        const port = typeof c.config.port === "number" ? c.config.port : DEFAULT_PORT
        const state = port === 0
          ? "on a free port chosen when anna gateway starts"
          : (yield* listening(host, port))
          ? `on ${host}:${port}: listening`
          : `on ${host}:${port}: nothing listens now (anna gateway serves it)`
        add("channels", { name: "http", ok: true, detail: `enabled, OpenAI-compatible API ${state}` })
      }
      return yield* report
    }).pipe(
      Effect.provide(StoresWithMemory),
      // The database would not open (e.g. a role without the privileges a migration needs): what
      // was found so far, and why, instead of one error line.
      Effect.catchTags({
        DatabaseUnavailable: (e) => Effect.andThen(Effect.sync(() => add("database", { name: "state", ok: false, detail: e.message, fix: "see the database checks above" })), report)
      })
    )
  })).pipe(
    Command.withDescription("Check the database (on PostgreSQL: connection, version, migrations, privileges), the Docker sandbox, providers and channels, and say what to fix"),
    Command.provide(AppConfigLive)
  )
