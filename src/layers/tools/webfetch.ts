/**
 * The `webfetch` tool (issue 14): fetch an http(s) URL and give the model readable Markdown — the main
 * content of an HTML page (title first, links absolute), text/JSON/XML as text, anything else a
 * one-line description. A plugin tool: offered to a session only when the `webfetch` plugin is on for
 * the agent (`anna plugin enable|disable webfetch [--agent A]`, checked again on every call) and the
 * agent's `tools` setting allows it.
 *
 * The SSRF guard (domain/webfetch/address.ts, layers/webfetch/guardedGet.ts) refuses loopback,
 * private, link-local, metadata… addresses, after DNS and on every redirect, unless the agent's
 * plugin configuration relaxes it: `allow_private=true` (every non-public address but the cloud
 * metadata ones) or `allow_hosts=[…]` (these host names / IP literals only). Each connection the
 * relaxed policy lets through is logged.
 */
import { Duration, Effect, Schema } from "effect"
import type { FetchPolicy } from "../../domain/webfetch/address.ts"
import { render } from "../../domain/webfetch/render.ts"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import { PluginStore } from "../../services/PluginStore.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"
import { guardedGet, type Resolver, systemResolver } from "../webfetch/guardedGet.ts"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = "webfetch"
export const DEFAULT_MAX_CHARS = 40_000
export const MAX_MAX_CHARS = 200_000

export interface WebFetchOptions {
  /** Host name resolution (default: the system resolver). */
  readonly resolver?: Resolver | undefined
  /** The whole fetch, redirects included (default 30 s). */
  readonly timeout?: Duration.Input | undefined
  /** Response bodies are cut here (default 5 MiB). */
  readonly maxBytes?: number | undefined
  /** Default 5. */
  readonly maxRedirects?: number | undefined
}

const Input = Schema.Struct({
  url: Schema.String.annotate({ description: "The http or https URL to read." }),
  max_chars: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 100, maximum: MAX_MAX_CHARS })).annotate({
    description: `At most this many characters of the page (default ${DEFAULT_MAX_CHARS}).`
  }))
})
const decodeInput = Schema.decodeUnknownEffect(Input)

/** The plugin's configuration keys webfetch reads (others are ignored). */
const PluginConfig = Schema.Struct({
  allow_private: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Literals(["true", "false"])])),
  allow_hosts: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.String)]))
})
const decodeConfig = Schema.decodeUnknownEffect(PluginConfig)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })

/** The agent's policy from its `webfetch` plugin configuration. */
export const policyOf = (config: typeof PluginConfig["Type"]): FetchPolicy => {
  const hosts = config.allow_hosts === undefined ? [] : typeof config.allow_hosts === "string" ? config.allow_hosts.split(",") : config.allow_hosts
  return {
    allowPrivate: config.allow_private === true || config.allow_private === "true",
    allowHosts: hosts.map((h) => h.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")).filter((h) => h !== "")
  }
}

const sizeText = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`)

export const webfetchTool = (plugins: PluginStore["Service"], options: WebFetchOptions = {}): Tool => {
  const timeout = Duration.fromInputUnsafe(options.timeout ?? Duration.seconds(30))
  const maxBytes = options.maxBytes ?? 5 * 1024 * 1024
  const maxRedirects = options.maxRedirects ?? 5
  const resolver = options.resolver ?? systemResolver
  const storage = () => fail("the plugin settings could not be read; try again")

  const run = Effect.fn("webfetch.execute")(function*(raw: unknown, ctx: ToolCallContext) {
    const input = yield* decodeInput(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
    if (!(yield* plugins.enabledFor(TOOL_NAME, ctx.agentId).pipe(Effect.mapError(storage)))) {
      return yield* fail("the webfetch plugin is disabled for this agent")
    }
    const raw_config = yield* plugins.configFor(TOOL_NAME, ctx.agentId).pipe(Effect.mapError(storage))
    const config = yield* decodeConfig(raw_config).pipe(
      Effect.mapError((e) => fail(`the agent's webfetch configuration is invalid (allow_private: true|false, allow_hosts: a list of hosts): ${e.message}`))
    )
    const relaxed: Array<readonly [string, string]> = []
    const body = yield* guardedGet(input.url, {
      policy: policyOf(config),
      resolver,
      maxBytes,
      maxRedirects,
      onRelaxed: (url, address) => relaxed.push([url, address])
    }).pipe(
      Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(fail(`no complete answer from ${input.url} within ${Duration.format(timeout)}`)) }),
      Effect.mapError((e) => (e._tag === "ToolError" ? e : fail(e.message))),
      Effect.ensuring(Effect.suspend(() =>
        Effect.forEach(relaxed, ([url, address]) =>
          Effect.logWarning("webfetch reached a non-public address: allowed by the agent's webfetch plugin configuration").pipe(
            Effect.annotateLogs({ agent: ctx.agentId, url, address })
          ), { discard: true })
      ))
    )
    const page = render(body)
    const maxChars = input.max_chars ?? DEFAULT_MAX_CHARS
    const notes = [...page.notes]
    if (body.truncated && page.kind !== "binary") notes.push(`the response was cut at ${sizeText(maxBytes)}`)
    let text = page.title === undefined ? page.text : `# ${page.title}\n\n${page.text}`
    if (text.length > maxChars) {
      notes.push(`shown: the first ${maxChars} of ${text.length} characters (ask again with a larger max_chars, up to ${MAX_MAX_CHARS}, for more)`)
      text = text.slice(0, maxChars)
    }
    const size = body.declaredSize !== undefined && body.bytes.length === 0 ? body.declaredSize : body.bytes.length
    const header = `URL: ${body.url} · status ${body.status} · ${body.contentType || "no content type"} · ${sizeText(size)}`
    return [header, ...notes.map((n) => `Note: ${n}`), "", text].join("\n")
  })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Read a web page: fetches an http(s) URL and returns its main content as Markdown (links kept),",
        "or the text of a text/JSON/XML response; other types (images, PDF…) are only described.",
        "Local and private network addresses are refused."
      ].join(" "),
      inputSchema: inputSchemaOf(Input)
    },
    execute: run
  }
}

/** The webfetch source: the tool when the plugin is on for the session's agent. */
export const source = (options: WebFetchOptions = {}) =>
  Effect.gen(function*() {
    const plugins = yield* PluginStore
    const tool = webfetchTool(plugins, options)
    const out: ToolSource = {
      id: TOOL_NAME,
      // Switched on or off for the agent: its sessions get new runners, so the change applies next turn.
      version: (agentId) =>
        plugins.enabledFor(TOOL_NAME, agentId).pipe(Effect.map((on) => (on ? "on" : "off")), Effect.orElseSucceed(() => "unreadable")),
      tools: (session) =>
        Effect.gen(function*() {
          if (!session.enabled(TOOL_NAME)) return []
          const on = yield* plugins.enabledFor(TOOL_NAME, session.agentId).pipe(
            Effect.catch((e) => Effect.as(Effect.logWarning("webfetch: plugin state unreadable, tool not offered", e), false))
          )
          return on ? [tool] : []
        })
    }
    return out
  })

/** Registers webfetch with these options (tests: a short timeout, an injected resolver). */
export const layerWith = (options: WebFetchOptions) => ToolCatalogLayer.register(source(options))

export const layer = layerWith({})
