/**
 * `anna provider add|set|list|remove|models|price|prices|usage` and `anna onboard`. Credentials are never printed in
 * full (text or JSON): API keys and extra header values as `sk-…abcd`, URL user info and query values
 * as `***`, and error messages scrubbed of the provider's secrets (an SDK error can quote a request).
 */
import { Console, Effect, Option, Stdio } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { formatModelRef } from "../domain/config/agent.ts"
import { InvalidConfig } from "../domain/config/errors.ts"
import { formatUsd, type ModelPrice } from "../domain/model/prices.ts"
import {
  DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS,
  DEFAULT_RETRY_BUDGET_MS,
  firstByteTimeoutProblem,
  maskKey,
  maskUrl,
  type ModelInfo,
  PROVIDER_TYPES,
  type ProviderConfig,
  providerSecrets,
  redactSecrets,
  shownProvider
} from "../domain/model/types.ts"
import * as ProviderClients from "../layers/providers/SdkProviderRegistry.ts"
import { ProviderRegistry } from "../services/ProviderRegistry.ts"
import { ProviderStore } from "../services/ProviderStore.ts"
import { UsageLog } from "../services/UsageLog.ts"
import { Providers } from "./layers.ts"
import { onboardFromEnv, onboardWizard } from "./onboard.ts"
import { printJson, table, usageError, usageOf } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))

const firstByteTimeoutFlag = Flag.Finite("first-byte-timeout").pipe(
  Flag.withDescription(
    `Seconds one attempt may wait for the response to start (default ${DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS}); all attempts together stop after ${DEFAULT_RETRY_BUDGET_MS / 1000} s`
  ),
  Flag.optional
)

const add = Command.make("add", {
  id: Argument.String("id").pipe(Argument.withDescription("Provider id, e.g. openai or local-ollama")),
  type: Flag.Literals("type", PROVIDER_TYPES).pipe(
    Flag.withDescription("anthropic (Messages API), openai (Chat Completions; also Ollama, vLLM, llama.cpp) or openai-response (Responses API)")
  ),
  baseUrl: Flag.String("base-url").pipe(Flag.withDescription("API base URL (default: the provider's public endpoint)"), Flag.optional),
  apiKey: Flag.String("api-key").pipe(Flag.withDescription("API key (prefer --api-key-env: shell history keeps flags)"), Flag.optional),
  apiKeyEnv: Flag.String("api-key-env").pipe(Flag.withDescription("Read the API key from this environment variable"), Flag.optional),
  model: Flag.String("model").pipe(Flag.withDescription("A model this provider serves (repeatable)"), Flag.atLeast(0)),
  defaultModel: Flag.String("default-model").pipe(
    Flag.withDescription("Model used when none is named (default: the first --model, else the first the server lists)"),
    Flag.optional
  ),
  header: Flag.KeyValuePair("header").pipe(Flag.withDescription("Extra HTTP header NAME=VALUE (repeatable)"), Flag.optional),
  disabled: Flag.Boolean("disabled").pipe(Flag.withDescription("Add it disabled"), Flag.withDefault(false)),
  firstByteTimeout: firstByteTimeoutFlag,
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* ProviderStore
    let apiKey = Option.getOrElse(f.apiKey, () => "")
    if (Option.isSome(f.apiKeyEnv)) {
      const value = process.env[f.apiKeyEnv.value]
      if (value === undefined || value === "") {
        return yield* new InvalidConfig({ reason: `environment variable ${f.apiKeyEnv.value} is not set` })
      }
      apiKey = value
    }
    const base: ProviderConfig = {
      id: f.id,
      type: f.type,
      baseUrl: Option.getOrElse(f.baseUrl, () => ""),
      apiKey,
      models: f.model,
      defaultModel: Option.getOrElse(f.defaultModel, () => f.model[0] ?? ""),
      headers: Option.getOrElse(f.header, () => ({})),
      enabled: !f.disabled,
      ...(Option.isSome(f.firstByteTimeout) ? { firstByteTimeoutSeconds: f.firstByteTimeout.value } : {})
    }
    let config = base
    if (config.defaultModel === "") {
      const listed = yield* ProviderClients.clientFor({ ...base, defaultModel: "-" }).pipe(
        Effect.flatMap((client) => client.listModels),
        Effect.mapError((e) =>
          new InvalidConfig({
            reason: `no default model given and the server's models could not be listed (${redactSecrets(e.message, providerSecrets(base))}); pass --default-model`
          })
        )
      )
      const first = listed[0]
      if (first === undefined) return yield* new InvalidConfig({ reason: "the server lists no models; pass --default-model" })
      config = { ...base, defaultModel: first.id }
    }
    // The store's refusal may quote the base URL; its credentials stay hidden.
    yield* store.add(config).pipe(Effect.catchTag("InvalidConfig", (e) => usageError(["anna", "provider", "add"], redactSecrets(e.reason, providerSecrets(config)))))
    if (f.json) return yield* printJson(shownProvider(config))
    yield* Console.log(`Added provider ${config.id} (${config.type}, default model ${config.defaultModel}, key ${maskKey(config.apiKey)}).`)
  })).pipe(Command.withDescription("Add a model provider"))

/**
 * `anna provider set ID [--base-url URL] [--api-key KEY | --api-key-env VAR] [--model M…]
 * [--default-model M] [--header NAME=VALUE…] [--enable | --disable] [--first-byte-timeout S|default]`:
 * changes what is given (a new key in place, say, for a provider agents use), validated as `add`.
 */
const set = Command.make("set", {
  id: Argument.String("id").pipe(Argument.withDescription("Provider id")),
  baseUrl: Flag.String("base-url").pipe(Flag.withDescription("A new API base URL (\"\" = the provider's public endpoint)"), Flag.optional),
  apiKey: Flag.String("api-key").pipe(Flag.withDescription("A new API key (prefer --api-key-env: shell history keeps flags)"), Flag.optional),
  apiKeyEnv: Flag.String("api-key-env").pipe(Flag.withDescription("Read the new API key from this environment variable"), Flag.optional),
  model: Flag.String("model").pipe(Flag.withDescription("The models this provider serves, replacing the list (repeatable)"), Flag.atLeast(0)),
  defaultModel: Flag.String("default-model").pipe(Flag.withDescription("The model used when none is named"), Flag.optional),
  header: Flag.KeyValuePair("header").pipe(Flag.withDescription("Extra HTTP headers NAME=VALUE, replacing the old ones (repeatable)"), Flag.optional),
  enable: Flag.Boolean("enable").pipe(Flag.withDescription("Enable the provider"), Flag.withDefault(false)),
  disable: Flag.Boolean("disable").pipe(Flag.withDescription("Disable the provider (its agents cannot answer)"), Flag.withDefault(false)),
  firstByteTimeout: Flag.String("first-byte-timeout").pipe(
    Flag.withDescription(`Seconds one attempt may wait for the response to start, or "default" (${DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS} s)`),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const SET = ["anna", "provider", "set"]
    if (f.enable && f.disable) return yield* usageError(SET, "--enable and --disable contradict each other")
    if (Option.isSome(f.apiKey) && Option.isSome(f.apiKeyEnv)) return yield* usageError(SET, "give --api-key or --api-key-env, not both")
    let seconds: number | null | undefined
    if (Option.isSome(f.firstByteTimeout)) {
      const raw = f.firstByteTimeout.value.trim()
      seconds = raw === "default" ? null : Number(raw)
      if (seconds !== null && (raw === "" || firstByteTimeoutProblem(seconds) !== undefined)) {
        return yield* usageError(SET, `--first-byte-timeout takes seconds above 0 and at most 3600, or "default"; got "${raw}"`)
      }
    }
    let apiKey = Option.getOrUndefined(f.apiKey)
    if (Option.isSome(f.apiKeyEnv)) {
      const value = process.env[f.apiKeyEnv.value]
      if (value === undefined || value === "") return yield* new InvalidConfig({ reason: `environment variable ${f.apiKeyEnv.value} is not set` })
      apiKey = value
    }
    const patch = {
      baseUrl: Option.getOrUndefined(f.baseUrl),
      apiKey,
      models: f.model.length > 0 ? f.model : undefined,
      defaultModel: Option.getOrUndefined(f.defaultModel),
      headers: Option.getOrUndefined(f.header),
      enabled: f.enable ? true : f.disable ? false : undefined,
      firstByteTimeoutSeconds: seconds
    }
    if (Object.values(patch).every((v) => v === undefined)) {
      return yield* usageError(SET, "nothing to change: give at least one of --base-url, --api-key, --api-key-env, --model, --default-model, --header, --enable, --disable, --first-byte-timeout")
    }
    const store = yield* ProviderStore
    const before = yield* store.get(f.id)
    // The store's refusal may quote the base URL; the old and new credentials stay hidden.
    const secrets = [...providerSecrets(before), ...providerSecrets({ ...before, apiKey: apiKey ?? before.apiKey, baseUrl: patch.baseUrl ?? before.baseUrl, headers: patch.headers ?? before.headers })]
    const updated = yield* store.update(f.id, patch).pipe(Effect.catchTag("InvalidConfig", (e) => usageError(SET, redactSecrets(e.reason, secrets))))
    if (f.json) return yield* printJson(shownProvider(updated))
    const timeout = updated.firstByteTimeoutSeconds === undefined ? `${DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS} s (default)` : `${updated.firstByteTimeoutSeconds} s`
    yield* Console.log(
      `Provider ${f.id}: ${updated.enabled ? "enabled" : "disabled"}, default model ${updated.defaultModel}, key ${maskKey(updated.apiKey)}, first-byte timeout ${timeout}.`
    )
  })).pipe(Command.withDescription("Change a provider's settings (key, base URL, models, headers, enabled, first-byte timeout)"))

const list = Command.make("list", { json }, (f) =>
  Effect.gen(function*() {
    const all = yield* (yield* ProviderStore).list
    if (f.json) return yield* printJson(all.map(shownProvider))
    if (all.length === 0) return yield* Console.log("No providers. Add one with anna provider add, or run anna onboard --from-env.")
    yield* Console.log(table(
      ["ID", "TYPE", "BASE URL", "KEY", "DEFAULT MODEL", "FIRST BYTE", "STATE"],
      all.map((p) => [
        p.id,
        p.type,
        maskUrl(p.baseUrl) || "(public)",
        maskKey(p.apiKey),
        p.defaultModel,
        `${p.firstByteTimeoutSeconds ?? DEFAULT_FIRST_BYTE_TIMEOUT_SECONDS} s`,
        p.enabled ? "enabled" : "disabled"
      ])
    ))
  })).pipe(Command.withDescription("List providers (credentials masked)"))

const remove = Command.make("remove", { id: Argument.String("id").pipe(Argument.withDescription("Provider id")), json }, (f) =>
  Effect.gen(function*() {
    yield* (yield* ProviderStore).remove(f.id)
    yield* f.json ? printJson({ removed: f.id }) : Console.log(`Removed provider ${f.id}.`)
  })).pipe(Command.withDescription("Remove a provider (refused while an agent uses it)"))

const models = Command.make("models", {
  id: Argument.String("id").pipe(Argument.withDescription("Provider id (default: every enabled provider)"), Argument.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* ProviderStore
    const registry = yield* ProviderRegistry
    const targets = Option.isSome(f.id) ? [yield* store.get(f.id.value)] : (yield* store.list).filter((p) => p.enabled)
    const rows: Array<{ provider: string; models: ReadonlyArray<ModelInfo>; error?: string }> = []
    for (const p of targets) {
      const listed = yield* registry.client(p.id).pipe(Effect.flatMap((c) => c.listModels), Effect.result)
      rows.push(
        listed._tag === "Success"
          ? { provider: p.id, models: listed.success }
          : { provider: p.id, models: [], error: redactSecrets(listed.failure.message, providerSecrets(p)) }
      )
    }
    if (f.json) return yield* printJson(rows)
    if (rows.length === 0) return yield* Console.log("No enabled providers.")
    for (const r of rows) {
      if (r.error !== undefined) yield* Console.error(`${r.provider}: ${r.error}`)
      for (const m of r.models) yield* Console.log(`${r.provider}/${m.id}`)
    }
    if (rows.length > 0 && rows.every((r) => r.error !== undefined)) {
      return yield* new InvalidConfig({ reason: "no provider could list its models" })
    }
  })).pipe(Command.withDescription("List the models each provider's server offers"))

const usd = (name: string, what: string) => Flag.Finite(name).pipe(Flag.withDescription(`${what}, USD per million tokens`), Flag.optional)

/**
 * `anna provider price ID MODEL --input USD --output USD [--cache-read USD] [--cache-write USD]`
 * sets (replaces) a model's price; `--remove` removes it. Usage is then costed from it, past calls too.
 */
const price = Command.make("price", {
  id: Argument.String("provider").pipe(Argument.withDescription("Provider id")),
  model: Argument.String("model").pipe(Argument.withDescription("Model id, as the usage log names it (anna provider usage)")),
  input: usd("input", "Price of input (prompt) tokens"),
  output: usd("output", "Price of output tokens"),
  cacheRead: usd("cache-read", "Price of prompt tokens read from the cache (default: the input price)"),
  cacheWrite: usd("cache-write", "Price of prompt tokens written to the cache (default: the input price)"),
  remove: Flag.Boolean("remove").pipe(Flag.withDescription("Remove the model's price"), Flag.withDefault(false)),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* ProviderStore
    const PRICE = ["anna", "provider", "price"]
    const given = [f.input, f.output, f.cacheRead, f.cacheWrite].some(Option.isSome)
    if (f.remove) {
      if (given) return yield* usageError(PRICE, "--remove takes no prices")
      yield* store.setPrice(f.id, f.model, null)
      return yield* f.json ? printJson({ removed: { providerId: f.id, model: f.model } }) : Console.log(`Removed the price of ${f.id}/${f.model}.`)
    }
    if (Option.isNone(f.input) || Option.isNone(f.output)) {
      return yield* usageError(PRICE, "give --input and --output (USD per million tokens), or --remove")
    }
    // The store's InvalidConfig is a price out of range or a malformed model id.
    yield* store.setPrice(f.id, f.model, {
      input: f.input.value,
      output: f.output.value,
      cacheRead: Option.getOrNull(f.cacheRead),
      cacheWrite: Option.getOrNull(f.cacheWrite)
    }).pipe(Effect.catchTag("InvalidConfig", usageOf(PRICE)))
    const stored = (yield* store.prices(f.id)).find((p) => p.model === f.model)
    if (f.json) return yield* printJson(stored ?? null)
    yield* Console.log(`Price of ${f.id}/${f.model} set: ${describePrice({ input: f.input.value, output: f.output.value, cacheRead: Option.getOrNull(f.cacheRead), cacheWrite: Option.getOrNull(f.cacheWrite) })} per million tokens.`)
  })).pipe(Command.withDescription("Set (or with --remove, remove) a model's price in USD per million tokens, for usage costs"))

const describePrice = (p: Pick<ModelPrice, "input" | "output" | "cacheRead" | "cacheWrite">) =>
  `input $${p.input}, output $${p.output}` +
  (p.cacheRead === null ? "" : `, cache read $${p.cacheRead}`) +
  (p.cacheWrite === null ? "" : `, cache write $${p.cacheWrite}`)

const prices = Command.make("prices", {
  id: Argument.String("provider").pipe(Argument.withDescription("Provider id (default: every provider)"), Argument.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const all = yield* (yield* ProviderStore).prices(Option.getOrUndefined(f.id))
    if (f.json) return yield* printJson(all)
    if (all.length === 0) return yield* Console.log("No prices set. Set one with anna provider price PROVIDER MODEL --input USD --output USD.")
    const cell = (n: number | null) => (n === null ? "(input)" : `$${n}`)
    yield* Console.log(table(
      ["PROVIDER", "MODEL", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE"],
      all.map((p) => [p.providerId, p.model, `$${p.input}`, `$${p.output}`, cell(p.cacheRead), cell(p.cacheWrite)])
    ))
    yield* Console.log("USD per million tokens.")
  })).pipe(Command.withDescription("List model prices (USD per million tokens)"))

const usage = Command.make("usage", {
  session: Flag.String("session").pipe(Flag.withDescription("Only this session"), Flag.optional),
  agent: Flag.String("agent").pipe(Flag.withDescription("Only this agent's calls"), Flag.optional),
  user: Flag.String("user").pipe(Flag.withDescription("Only calls made for this user"), Flag.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const totals = yield* (yield* UsageLog).totals({
      sessionKey: Option.getOrUndefined(f.session),
      agentId: Option.getOrUndefined(f.agent),
      userId: Option.getOrUndefined(f.user)
    })
    if (f.json) return yield* printJson(totals)
    if (totals.length === 0) return yield* Console.log("No model calls recorded.")
    // The COST column once some price applies: "—" where none does, "(partial)" where some calls are unpriced.
    const costed = totals.some((t) => t.cost !== null)
    const cost = (t: (typeof totals)[number]) =>
      t.cost === null ? "—" : `${formatUsd(t.cost)}${t.unpricedCalls > 0 ? " (partial)" : ""}`
    yield* Console.log(table(
      ["PROVIDER", "MODEL", "PURPOSE", "CALLS", "FAILED", "INPUT TOKENS", "OUTPUT TOKENS", ...(costed ? ["COST"] : [])],
      totals.map((t) => [
        t.providerId,
        t.model,
        t.purpose,
        String(t.calls),
        String(t.failed),
        String(t.inputTokens),
        String(t.outputTokens),
        ...(costed ? [cost(t)] : [])
      ])
    ))
  })).pipe(Command.withDescription("Token usage of model calls (chat and summaries)"))

export const providerCommand = Command.make("provider").pipe(
  Command.withDescription("Model providers: add, set, list, remove, models, price, prices, usage"),
  Command.withSubcommands([add, set, list, remove, models, price, prices, usage]),
  Command.provide(Providers)
)

/** Without a terminal the wizard cannot ask: what to do instead (a usage error, exit 2). */
const NO_TERMINAL =
  "anna: onboard asks its questions on a terminal, and stdin is not one: set ANTHROPIC_API_KEY and/or OPENAI_API_KEY (and *_BASE_URL for a compatible server) and run anna onboard --from-env, or add a provider with anna provider add"

const wizard = (json: boolean) =>
  Effect.gen(function*() {
    if (!(yield* (yield* Stdio.Stdio).stdinIsTerminal)) {
      yield* Console.error(NO_TERMINAL)
      return yield* Effect.sync(() => {
        process.exitCode = 2
      })
    }
    const done = yield* onboardWizard.pipe(
      // Leaving a prompt (Ctrl-C, Esc, Ctrl-D) is an interruption: exit 130, nothing created.
      Effect.catchTag("QuitError", () => Console.error("anna: onboarding cancelled; nothing was created.").pipe(Effect.andThen(Effect.interrupt)))
    )
    if (json) return yield* printJson(Option.getOrNull(done))
    if (Option.isNone(done)) return yield* Console.log("Nothing was created.")
    const r = done.value
    // Masked already (shownProvider).
    const p = r.provider
    yield* Console.log(`Created provider ${p.id} (${p.type}, ${p.baseUrl || "official API"}, default model ${r.model}, key ${p.apiKey}).`)
    const ref = formatModelRef({ providerId: p.id, model: r.model })
    yield* Console.log(
      r.agent.outcome === "created"
        ? `Created agent ${r.agent.id} on ${ref}.`
        : r.agent.outcome === "updated"
        ? `Agent ${r.agent.id} now uses ${ref}${r.agent.enabled ? "" : " (it is disabled: anna agent enable " + r.agent.id + ")"}.`
        : `Agent ${r.agent.id} already exists; unchanged (anna agent set ${r.agent.id} --model ${ref} to use this provider).`
    )
    yield* Console.log("Next: anna chat (talk to the agent in this terminal), or anna to run the gateway.")
  })

export const onboardCommand = Command.make("onboard", {
  fromEnv: Flag.Boolean("from-env").pipe(
    Flag.withDescription("Create providers from ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL and OPENAI_API_KEY/OPENAI_BASE_URL instead of asking"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    if (!f.fromEnv) return yield* wizard(f.json)
    const r = yield* onboardFromEnv
    if (f.json) return yield* printJson(r)
    for (const p of r.createdProviders) {
      yield* Console.log(`Created provider ${p.id} (${p.type}), default model ${p.defaultModel}${p.modelSource === "server" ? " (from the server)" : ""}.`)
    }
    for (const id of r.existingProviders) yield* Console.log(`Provider ${id} already exists; unchanged.`)
    if (r.createdAgent !== null) yield* Console.log(`Created agent ${r.createdAgent}.`)
    if (r.createdProviders.length === 0 && r.existingProviders.length === 0) {
      yield* Console.log(`Nothing to do: none of ${r.missing.join(", ")} (or their *_BASE_URL) is set.`)
    }
  })).pipe(
    Command.withDescription(
      "First-run setup: on a terminal, a wizard (provider type, base URL, key, a model from the server's list) that creates a provider and the agent default; --from-env takes them from the environment (idempotent)"
    ),
    Command.provide(Providers)
  )
