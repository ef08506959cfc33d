/**
 * Slash commands, the same for every channel (seed 001, "Channel Interface"): /new, /compact,
 * /abort, /whoami, /model, /agent, /help. Each answers with text; an unknown command gets the list.
 */
import { Effect, Option } from "effect"
import type { ResolvedChat } from "../../domain/runtime/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { Compactor } from "../../services/Compactor.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Explorer } from "../../services/Explorer.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"

export const HELP = [
  "/new — start a fresh conversation (the old one stays stored and searchable)",
  "/compact — compact this conversation now",
  "/abort — stop the running turn",
  "/whoami — who and where you are",
  "/model [name] — list the agent's models, or use one for this conversation",
  "/agent [id] — list agents, or talk to another one",
  "/help — this list"
].join("\n")

export const isCommand = (text: string): boolean => /^\/[a-z]+(\s|$)/i.test(text.trim())

/** The next context name after `/new`: dm → dm-2 → dm-3 … */
export const nextContext = (chatId: string, current: string): string => {
  const base = current === "main" ? chatId : current
  const m = /^(.*)-(\d+)$/.exec(base)
  return m !== null && m[1] === chatId ? `${chatId}-${Number(m[2]) + 1}` : `${chatId}-2`
}

export const runCommand = (chat: ResolvedChat, text: string, abort: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    const [name = "", ...args] = text.trim().slice(1).split(/\s+/)
    const arg = args.join(" ").trim()
    const config = yield* ConfigStore
    switch (name.toLowerCase()) {
      case "help":
        return HELP
      case "new": {
        const state = yield* config.chatState(chat.agentId, chat.platform, chat.userId, chat.chatId)
        const next = nextContext(chat.chatId, state.context)
        yield* config.setChatState(chat.agentId, chat.platform, chat.userId, chat.chatId, { context: next })
        return `Started a new conversation. The previous one is kept and stays searchable (session ${chat.sessionKey}).`
      }
      case "abort":
        return (yield* abort) ? "Stopped the running turn." : "Nothing is running."
      case "whoami": {
        const memory = yield* MemoryProvider
        return [
          `user: ${chat.userId}${chat.userName === "" ? "" : ` (${chat.userName})`}`,
          `agent: ${chat.agentId}`,
          `platform: ${chat.platform}, chat: ${chat.chatId}${chat.isGroup ? " (group)" : ""}`,
          `session: ${chat.sessionKey}`,
          `model: ${chat.model === "" ? "the agent's default" : chat.model}`,
          `memory: ${memory.name}`
        ].join("\n")
      }
      case "compact": {
        const memory = yield* MemoryProvider
        const compactor = yield* Effect.serviceOption(Compactor)
        if (Option.isNone(compactor)) return `The memory plugin in use (${memory.name}) does not compact.`
        const report = yield* compactor.value.compact(chat.sessionKey, { full: true })
        if (!report.compacted) return `Nothing to compact yet (${report.tokensBefore} tokens in context; stop: ${report.stopReason}).`
        // memory/simple: one handoff summary (seed 003), which the report carries; show it whole.
        if (report.summary !== undefined) {
          return `Compacted: ${report.tokensBefore} → ${report.tokensAfter} tokens. The recent messages stay as they are; everything before them is now this summary (${report.summary.id}):\n\n${report.summary.content}`
        }
        const assembled = yield* memory.assemble(chat.sessionKey, { budget: 1_000_000 })
        const first = assembled.messages[0]
        const id = typeof first?.content === "string" ? /id="(sum_\d+)"/.exec(first.content)?.[1] : undefined
        const explorer = yield* Effect.serviceOption(Explorer)
        const summary = id === undefined || Option.isNone(explorer)
          ? ""
          : yield* explorer.value.describe(id).pipe(Effect.map((d) => `\n\nSummary (${d.id}):\n${d.content}`), Effect.orElseSucceed(() => ""))
        return `Compacted: ${report.tokensBefore} → ${report.tokensAfter} tokens (${report.leafSummaries} leaf + ${report.condensedSummaries} condensed summaries).${summary}`
      }
      case "model": {
        const agents = yield* AgentStore
        const agent = yield* agents.get(chat.agentId)
        if (arg === "") {
          if (agent.providerId === null) return "This agent has no provider yet."
          const client = yield* (yield* ProviderRegistry).client(agent.providerId)
          const models = yield* client.listModels.pipe(Effect.orElseSucceed(() => []))
          const current = chat.model === "" ? agent.model || client.defaultModel : chat.model
          const names = models.length === 0 ? [client.defaultModel] : models.map((m) => m.id)
          return `Models of ${client.provider} (current: ${current}):\n${names.map((n) => `${n === current ? "*" : "-"} ${n}`).join("\n")}\nSwitch with /model NAME; /model default goes back to the agent's.`
        }
        const model = arg === "default" ? "" : arg
        yield* config.setChatState(chat.agentId, chat.platform, chat.userId, chat.chatId, { model })
        return model === "" ? "Back to the agent's model." : `This conversation now uses ${model}.`
      }
      case "agent": {
        const agents = (yield* (yield* AgentStore).list).filter((a) => a.enabled)
        if (arg === "") {
          return `Agents:\n${agents.map((a) => `${a.id === chat.agentId ? "*" : "-"} ${a.id}${a.name !== a.id ? ` (${a.name})` : ""}`).join("\n")}\nSwitch with /agent ID.`
        }
        const target = agents.find((a) => a.id === arg)
        if (target === undefined) return `No enabled agent "${arg}". ${agents.length > 0 ? `Agents: ${agents.map((a) => a.id).join(", ")}.` : ""}`
        if (chat.isGroup) yield* config.bindChat(chat.platform, chat.chatId, target.id)
        else yield* config.setDefaultAgent(chat.userId, target.id)
        return `You are now talking to ${target.id}${chat.isGroup ? " in this group" : ""}.`
      }
      default:
        return `Unknown command /${name}. Commands:\n${HELP}`
    }
  })
