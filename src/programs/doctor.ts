/**
 * `anna doctor`: checks the database, the Docker sandbox (engine, image, network policy), the
 * providers and the channels, and says what to fix. Exits 1 when something needs fixing.
 */
import { Console, Duration, Effect, Layer, Option, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { specFor } from "../domain/sandbox/spec.ts"
import { diagnose, type DoctorCheck, makeDocker } from "../layers/docker/client.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { PluginStore } from "../services/PluginStore.ts"
import { ProviderRegistry } from "../services/ProviderRegistry.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import * as SqliteMemoryStore from "../layers/SqliteMemoryStore.ts"
import * as SqlitePluginStore from "../layers/SqlitePluginStore.ts"
import { annaHome, dbPath } from "./env.ts"
import { printJson } from "./output.ts"
import { configLayer } from "./providerCommands.ts"

export class DoctorFound extends Schema.TaggedError<DoctorFound>()("DoctorFound", { problems: Schema.Number }) {
  override get message() {
    return `doctor found ${this.problems} thing(s) to fix`
  }
}

const doctorLayer = Layer.mergeAll(SqliteMemoryStore.layer, SqlitePluginStore.layer).pipe(Layer.provideMerge(configLayer))

export const doctorCommand = Command.make("doctor", {
  agent: Flag.String("agent").pipe(Flag.withDescription("Check this agent's sandbox settings (default: the default agent)"), Flag.optional),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
}, (f) =>
  Effect.gen(function*() {
    const checks: Array<DoctorCheck & { readonly area: string }> = []
    const add = (area: string, c: DoctorCheck) => checks.push({ area, ...c })

    const sessions = yield* (yield* MemoryStore).listConversations({})
    const memoryPlugin = yield* (yield* PluginStore).enabledMemory
    add("database", { name: "anna.db", ok: true, detail: `${yield* dbPath}: migrated, ${sessions.length} session(s), memory plugin ${memoryPlugin}` })

    const agents = yield* AgentStore
    const agent = Option.isSome(f.agent) ? yield* agents.get(f.agent.value) : Option.getOrUndefined(yield* agents.defaultAgent)
    const spec = specFor(yield* annaHome, agent)
    for (const c of yield* diagnose(makeDocker(10_000), spec.image, spec.network)) {
      add("sandbox", { ...c, name: `${c.name}${c.name === "docker" ? "" : ` (agent ${spec.agentId})`}` })
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
            detail: listed._tag === "Failure" ? listed.failure.message : "no answer within 15 s",
            fix: `check the key and base URL (anna provider list), or remove it (anna provider remove ${p.id})`
          }
      )
    }
    add("channels", { name: "channels", ok: true, detail: "none in this release (they arrive with the agent runtime)" })

    const failed = checks.filter((c) => !c.ok)
    if (f.json) yield* printJson({ ok: failed.length === 0, checks })
    else {
      for (const c of checks) {
        yield* Console.log(`${c.ok ? "ok  " : "FIX "} ${c.area}/${c.name}: ${c.detail}`)
        if (!c.ok && c.fix !== undefined) yield* Console.log(`     → ${c.fix}`)
      }
    }
    if (failed.length > 0) return yield* new DoctorFound({ problems: failed.length })
  })).pipe(
    Command.withDescription("Check the database, the Docker sandbox, providers and channels, and say what to fix"),
    Command.provide(doctorLayer)
  )
