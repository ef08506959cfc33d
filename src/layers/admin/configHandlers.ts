/**
 * `/api/bindings`, `/api/plugins` and `/api/settings` handlers: `anna channel bind|unbind|bindings`,
 * `anna plugin list|enable|disable` and `anna settings list|set|unset`, with the CLI's checks.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { BadRequest, NotFound } from "../../domain/admin/security.ts"
import { isValidId } from "../../domain/config/agent.ts"
import { SETTINGS, settingSpec, settingValue, unknownSetting } from "../../domain/config/settings.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { PluginStore } from "../../services/PluginStore.ts"
import { answer } from "./errors.ts"

const checkChat = (platform: string, chatId: string) =>
  !isValidId(platform)
    ? Effect.fail(BadRequest.of(`platform "${platform}" must be letters, digits, '.', '_' or '-'`))
    : chatId.trim() === ""
    ? Effect.fail(BadRequest.of("the chat id must not be empty"))
    : Effect.void

export const bindingsLayer = HttpApiBuilder.group(AdminApi, "bindings", Effect.fn(function*(handlers) {
  const config = yield* ConfigStore
  const agents = yield* AgentStore

  return handlers
    .handle("list", () =>
      answer(Effect.gen(function*() {
        const all = yield* agents.list
        const enabled = (id: string) => all.some((a) => a.id === id && a.enabled)
        return (yield* config.listBindings).map((b) => ({ ...b, agentEnabled: enabled(b.agentId) }))
      })))
    .handle("bind", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        yield* checkChat(params.platform, params.chatId)
        const agent = yield* agents.get(payload.agentId)
        yield* config.bindChat(params.platform, params.chatId, agent.id)
        return { platform: params.platform, chatId: params.chatId, agentId: agent.id, agentEnabled: agent.enabled }
      })))
    .handle("unbind", ({ params }) =>
      answer(Effect.gen(function*() {
        yield* checkChat(params.platform, params.chatId)
        if (Option.isNone(yield* config.chatBinding(params.platform, params.chatId))) {
          return yield* NotFound.of(`chat ${params.platform}/${params.chatId} is not bound`)
        }
        yield* config.bindChat(params.platform, params.chatId, null)
      })))
}))

export const pluginsLayer = HttpApiBuilder.group(AdminApi, "plugins", Effect.fn(function*(handlers) {
  const plugins = yield* PluginStore
  return handlers
    .handle("list", () => answer(Effect.map(plugins.list, (all) => all.map((p) => ({ ...p, config: { ...p.config } })))))
    .handle("enable", ({ payload }) => answer(plugins.enable(payload.id)))
    .handle("disable", ({ payload }) => answer(plugins.disable(payload.id)))
}))

export const settingsLayer = HttpApiBuilder.group(AdminApi, "settings", Effect.fn(function*(handlers) {
  const config = yield* ConfigStore

  const row = (key: string) =>
    Effect.gen(function*() {
      const spec = settingSpec(key)
      if (spec === undefined) return yield* NotFound.of(unknownSetting(key))
      const stored = Option.getOrUndefined(yield* config.getSetting(key))
      return { key, value: settingValue(key, stored), defaultValue: spec.defaultValue, stored: stored !== undefined, description: spec.description }
    })

  return handlers
    .handle("list", () => answer(Effect.forEach(SETTINGS, (s) => row(s.key))))
    .handle("set", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        const spec = settingSpec(params.key)
        if (spec === undefined) return yield* NotFound.of(unknownSetting(params.key))
        const problem = spec.problem(payload.value)
        if (problem !== undefined) return yield* BadRequest.of(`${params.key} ${problem}, got "${payload.value}"`)
        yield* config.setSetting(params.key, payload.value.trim())
        return yield* row(params.key)
      })))
    .handle("unset", ({ params }) =>
      answer(Effect.gen(function*() {
        if (settingSpec(params.key) === undefined) return yield* NotFound.of(unknownSetting(params.key))
        yield* config.deleteSetting(params.key)
        return yield* row(params.key)
      })))
}))
