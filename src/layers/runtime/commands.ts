/**
 * Slash commands, the same for every channel (seed 001, "Channel Interface"): /new, /compact,
 * /abort, /whoami, /model, /agent, /help; and the self-improving memory's /feedback and /reflect
 * (issue 15). Each answers with text; an unknown command gets the list.
 */
import { EVERYONE, mayUse } from "../../domain/access/policy.ts"
import { Effect, Option } from "effect"
import { ANY_PROVIDER_MODEL } from "../../domain/config/agent.ts"
import * as Metrics from "../../domain/observability/metrics.ts"
import { type Choice, type Choices, CONTEXT_MARK, type ResolvedChat } from "../../domain/runtime/types.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { Compactor } from "../../services/Compactor.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Explorer } from "../../services/Explorer.ts"
import { Learning } from "../../services/Learning.ts"
import { MemoryProvider } from "../../services/MemoryProvider.ts"
import { ProviderRegistry } from "../../services/ProviderRegistry.ts"
import { allowedModels, modelAllowed } from "./models.ts"

export const HELP = [
  "/new — start a fresh conversation (the old one stays stored and searchable)",
  "/compact — compact this conversation now",
  "/abort — stop the running turn",
  "/whoami — who and where you are",
  "/model [name] — show the model and the ones you may pick, or use one for this conversation",
  "/agent [id] [--default] — list agents, or talk to another one in this chat (--default: make it your default agent for every chat)",
  "/feedback good|bad — tell the agent how this conversation went (the guidelines and skills it used learn from it)",
  "/reflect — write the diary entry of this conversation's work so far now",
  "/help — this list"
].join("\n")

export const isCommand = (text: string): boolean => /^\/[a-z]+(\s|$)/i.test(text.trim())

/**
 * The next context after `/new`: dm → dm#2 → dm#3 … A chat's first context is its own id, so a
 * later one must be a name no chat can have: chat names may not contain CONTEXT_MARK (see
 * `chatNameProblem`), and the chat's id before the mark keeps contexts of different chats apart.
 * Contexts of the older scheme (dm-2, which chat "dm-2" shared) are counted on from.
 */
export const nextContext = (chatId: string, current: string): string => {
  const base = current === "main" ? chatId : current
  const number = (sep: string) => {
    const tail = base.startsWith(chatId + sep) ? base.slice(chatId.length + sep.length) : ""
    return /^\d{1,9}$/.test(tail) ? Number(tail) : undefined
  }
  return `${chatId}${CONTEXT_MARK}${(number(CONTEXT_MARK) ?? number("-") ?? 1) + 1}`
}

/** At most this many summaries made by one `/compact` are shown whole; the rest by id. */
const SHOWN_SUMMARIES = 3

/** At most this many models are shown in a reply (a provider can list hundreds). */
const SHOWN_MODELS = 40

/** A numbered list (a choice by number works where a platform has no picker), the current one marked. */
const numbered = (items: ReadonlyArray<{ readonly value: string; readonly label: string; readonly current: boolean }>): string =>
  items.map((c, i) => `${i + 1}. ${c.label}${c.current ? " (current)" : ""}`).join("\n")

const modelList = (names: ReadonlyArray<string>, current: string): string =>
  [
    numbered(modelChoices(names, current)),
    ...(names.length > SHOWN_MODELS ? [`… and ${names.length - SHOWN_MODELS} more`] : [])
  ].join("\n")

const modelChoices = (names: ReadonlyArray<string>, current: string): ReadonlyArray<Choice> =>
  names.slice(0, SHOWN_MODELS).map((n) => ({ value: n, label: n, current: n === current }))

/** `arg` as the NUMBERth of `values` (1-based) when it is a number that is not itself one of them. */
const byNumber = (arg: string, values: ReadonlyArray<string>): string =>
  /^\d{1,4}$/.test(arg) && !values.includes(arg) ? (values[Number(arg) - 1] ?? arg) : arg

/** A command's answer: text, and for /model and /agent the choices a platform's picker can offer. */
export type CommandReply = string | { readonly text: string; readonly choices: Choices }

export const replyText = (reply: CommandReply): string => (typeof reply === "string" ? reply : reply.text)

const chatRef = (chat: ResolvedChat) => ({ sessionKey: chat.sessionKey, agentId: chat.agentId, userId: chat.userId })

export const runCommand = (chat: ResolvedChat, text: string, abort: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    const [name = "", ...args] = text.trim().slice(1).split(/\s+/)
    const rawArg = args.join(" ").trim()
    let arg = rawArg
    const config = yield* ConfigStore
    switch (name.toLowerCase()) {
      case "help":
        return HELP
      case "new": {
        const state = yield* config.chatState(chat.agentId, chat.platform, chat.userId, chat.chatId)
        const next = nextContext(chat.chatId, state.context)
        yield* config.setChatState(chat.agentId, chat.platform, chat.userId, chat.chatId, { context: next })
        // The old conversation's burst of work ended: it is reflected on in the background.
        const learning = yield* Effect.serviceOption(Learning)
        if (Option.isSome(learning)) yield* learning.value.endBurst(chat.sessionKey, "new")
        return `Started a new conversation. The previous one is kept and stays searchable (session ${chat.sessionKey}).`
      }
      case "abort":
        return (yield* abort) ? "Stopped the running turn." : "Nothing is running."
      case "whoami": {
        const memory = yield* MemoryProvider
        // A choice the operator has since disallowed is not used (the turn falls back to the agent's).
        const agent = yield* (yield* AgentStore).get(chat.agentId).pipe(Effect.option)
        const chosen = chat.model !== "" && Option.isSome(agent) && modelAllowed(agent.value, chat.model) ? chat.model : ""
        return [
          `user: ${chat.userId}${chat.userName === "" ? "" : ` (${chat.userName})`}`,
          `agent: ${chat.agentId}`,
          `platform: ${chat.platform}, chat: ${chat.chatId}${chat.isGroup ? " (group)" : ""}`,
          `session: ${chat.sessionKey}`,
          `model: ${chosen === "" ? "the agent's default" : chosen}`,
          `memory: ${memory.name}`
        ].join("\n")
      }
      case "compact": {
        const memory = yield* MemoryProvider
        const compactor = yield* Effect.serviceOption(Compactor)
        if (Option.isNone(compactor)) return `The memory plugin in use (${memory.name}) does not compact.`
        const report = yield* Metrics.compaction("manual", compactor.value.compact(chat.sessionKey, { full: true }))
        if (!report.compacted) return `Nothing to compact yet (${report.tokensBefore} tokens in context; stop: ${report.stopReason}).`
        // memory/simple: one handoff summary (seed 003), which the report carries; show it whole.
        if (report.summary !== undefined) {
          return `Compacted: ${report.tokensBefore} → ${report.tokensAfter} tokens. The recent messages stay as they are; everything before them is now this summary (${report.summary.id}):\n\n${report.summary.content}`
        }
        // memory/lcm: the summaries this run made that stand in the context now (a leaf it made may
        // already be inside a condensed one it made after), oldest first; an older summary is not news.
        const explorer = yield* Effect.serviceOption(Explorer)
        const made = Option.isNone(explorer) ? [] : yield* Effect.forEach(
          report.summaryIds,
          (id) => explorer.value.describe(id).pipe(Effect.option)
        ).pipe(Effect.map((ds) => ds.flatMap((d) => Option.isSome(d) && d.value.live ? [d.value] : [])))
        const shown = made.toSorted((a, b) => a.sourceRange.firstSeq - b.sourceRange.firstSeq)
        const more = shown.slice(SHOWN_SUMMARIES).map((d) => d.id)
        const summary = shown.slice(0, SHOWN_SUMMARIES).map((d) => `\n\nSummary (${d.id}):\n${d.content}`).join("") +
          (more.length > 0 ? `\n\n… and ${more.length} more made now: ${more.join(", ")}` : "")
        return `Compacted: ${report.tokensBefore} → ${report.tokensAfter} tokens (${report.leafSummaries} leaf + ${report.condensedSummaries} condensed summaries).${summary}`
      }
      case "model": {
        const snapshot = yield* config.snapshot(chat.agentId).pipe(Effect.result)
        if (snapshot._tag === "Failure") {
          return snapshot.failure._tag === "NoModel" ? `This agent has no model yet: ${snapshot.failure.reason}.` : `No model can be chosen now: ${snapshot.failure.message}`
        }
        const { agent, provider, model: own } = snapshot.success
        // With "*" the provider's models count: what it declares and what its server lists now. A
        // listing that fails leaves the declared ones; its error is the operator's, not shown here.
        let listed: ReadonlyArray<string> = []
        let unlisted = false
        if (agent.allowedModels.includes(ANY_PROVIDER_MODEL)) {
          const served = yield* (yield* ProviderRegistry).client(provider.id).pipe(
            Effect.flatMap((c) => c.listModels),
            Effect.map((ms) => ms.map((m) => m.id)),
            Effect.result
          )
          unlisted = served._tag === "Failure"
          listed = [...provider.models, ...(served._tag === "Success" ? served.success : [])]
        }
        const names = allowedModels(agent, own, listed)
        const chosen = chat.model !== "" && modelAllowed(agent, chat.model, listed) ? chat.model : own
        const choices = `${modelList(names, chosen)}${unlisted ? "\n(the provider's model list could not be read now)" : ""}`
        if (arg === "") {
          const dropped = chat.model !== "" && chosen !== chat.model ? ` (${chat.model}, chosen earlier, is no longer allowed)` : ""
          const how = names.length > 1
            ? "\nSwitch with /model NUMBER or /model NAME; /model default goes back to the agent's."
            : "\nThis agent lets no other model be chosen."
          const reply: CommandReply = {
            text: `Model: ${chosen}${dropped}. Models you may pick:\n${choices}${how}`,
            choices: { command: "model", options: names.length > 1 ? modelChoices(names, chosen) : [] }
          }
          return reply
        }
        arg = byNumber(arg, names.slice(0, SHOWN_MODELS))
        if (arg === "default" || arg === own) {
          yield* config.setChatState(chat.agentId, chat.platform, chat.userId, chat.chatId, { model: "" })
          return `Back to the agent's model (${own}).`
        }
        if (!modelAllowed(agent, arg, listed)) {
          return `"${arg}" is not a model this agent may use. Models you may pick:\n${choices}`
        }
        yield* config.setChatState(chat.agentId, chat.platform, chat.userId, chat.chatId, { model: arg })
        return `This conversation now uses ${arg}.`
      }
      case "agent": {
        // A switch is this chat's (issue 24): `--default` asks for the user's default agent instead.
        const asDefault = args.some((a) => a.toLowerCase() === "--default")
        arg = args.filter((a) => a.toLowerCase() !== "--default").join(" ").trim()
        // Only the agents this user may use (their access policies) are listed or can be picked.
        const user = Option.getOrUndefined(yield* config.getUser(chat.userId))
        const subject = { id: chat.userId, attributes: user?.attributes ?? {} }
        const agents = (yield* (yield* AgentStore).list).filter((a) => a.enabled && mayUse(a.access ?? EVERYONE, subject))
        if (arg === "" && asDefault) return "Say which agent: /agent ID --default."
        if (arg === "") {
          const options = agents.map((a): Choice => ({ value: a.id, label: a.id + (a.name !== a.id ? ` (${a.name})` : ""), current: a.id === chat.agentId }))
          const reply: CommandReply = {
            text: `Agents:\n${numbered(options)}\nSwitch this chat with /agent NUMBER or /agent ID; add --default to make it your default agent.`,
            choices: { command: "agent", options: agents.length > 1 && chat.platform !== "http" ? options : [] }
          }
          return reply
        }
        arg = byNumber(arg, agents.map((a) => a.id))
        const target = agents.find((a) => a.id === arg)
        if (target === undefined) return `No enabled agent "${arg}". ${agents.length > 0 ? `Agents: ${agents.map((a) => a.id).join(", ")}.` : ""}`
        // Over HTTP the agent is the request's `model`: nothing here can change that, so say so plainly.
        if (chat.platform === "http") {
          return `Over HTTP the agent is the request's "model": send "model": "${target.id}" to talk to ${target.id} (GET /v1/models lists the agents). Nothing was changed.`
        }
        if (chat.isGroup) yield* config.bindChat(chat.platform, chat.chatId, target.id)
        // With --default this chat follows the (new) default; without, only this chat changes.
        else yield* config.setChatAgent(chat.platform, chat.userId, chat.chatId, asDefault ? null : target.id)
        if (asDefault) yield* config.setDefaultAgent(chat.userId, target.id)
        const where = chat.isGroup ? "in this group" : "in this chat"
        return asDefault
          ? `You are now talking to ${target.id} ${where}, and ${target.id} is now your default agent (for every chat where you did not pick another).`
          : `You are now talking to ${target.id} ${where}${chat.isGroup ? "" : `; your other chats keep theirs (/agent ${target.id} --default makes it your default)`}.`
      }
      case "feedback": {
        const learning = yield* Effect.serviceOption(Learning)
        if (Option.isNone(learning)) return "This deployment does not learn from feedback."
        const word = arg.toLowerCase()
        const outcome = ["good", "+", "👍", "yes"].includes(word) ? "success" : ["bad", "-", "👎", "no"].includes(word) ? "failure" : undefined
        if (outcome === undefined) return "Say /feedback good or /feedback bad."
        const report = yield* learning.value.feedback(chatRef(chat), outcome).pipe(Effect.result)
        if (report._tag === "Failure") return `Your feedback could not be recorded: ${report.failure.message}`
        const { rules, forYou, skills } = report.success
        if (rules.length === 0 && skills.length === 0) return "Thanks. No guideline or skill was used since the last feedback, so there was nothing to adjust."
        const everyone = rules.length - forYou.length
        const guidelines = (n: number) => `${n} guideline${n === 1 ? "" : "s"}`
        return `Thanks. ${outcome === "success" ? "Strengthened" : "Weakened"}: ${[
          ...(everyone > 0 ? [guidelines(everyone)] : []),
          ...(forYou.length > 0 ? [`${guidelines(forYou.length)} for you (shared with other users: it changes for them once several agree)`] : []),
          ...(skills.length > 0 ? [`skill${skills.length === 1 ? "" : "s"} ${skills.join(", ")}`] : [])
        ].join(" and ")}.`
      }
      case "reflect": {
        const learning = yield* Effect.serviceOption(Learning)
        if (Option.isNone(learning)) return "This deployment does not keep a diary."
        const entry = yield* learning.value.reflect(chat.sessionKey, "demand").pipe(Effect.result)
        if (entry._tag === "Failure") return entry.failure._tag === "ReflectionSkipped" ? `Nothing to reflect on: ${entry.failure.reason}.` : `Reflection failed: ${entry.failure.message}`
        if (Option.isNone(entry.success)) return "Nothing new to reflect on since the last diary entry."
        const e = entry.success.value
        return [
          `Diary entry ${e.id} (${e.status}, quality ${e.qualityScore.toFixed(2)}${e.source === "heuristic" ? ", written without a model" : ""}):`,
          ...e.accomplishments.slice(0, 3).map((a) => `- ${a}`),
          ...(e.keyLearnings.length > 0 ? [`Learned: ${e.keyLearnings.slice(0, 3).join("; ")}`] : [])
        ].join("\n")
      }
      default:
        return `Unknown command /${name}. Commands:\n${HELP}`
    }
  })
