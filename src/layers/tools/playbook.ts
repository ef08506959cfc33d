/**
 * The `playbook` tool (issue 15): the agent looks up the rules the user it talks to can see, proposes
 * a rule it learned, and marks a rule helpful or harmful. Offered when the plugin `learning` is on
 * for the agent and the agent enables the tool name `playbook`.
 *
 * Limits against a hostile chat user (the agent acts on their words):
 * - a proposal is always scoped to this user (never every user's, never global): it reaches no other
 *   user's prompt unless an operator promotes it;
 * - at most MAX_NEW_USER_RULES_PER_DAY rules scoped to the user are created per agent in 24 hours,
 *   and at most MAX_USER_RULES exist (counted from the playbook itself, so a restart resets nothing;
 *   rules reflection learned from the user count too; checked by the playbook in the same step as
 *   the insert, so parallel proposals cannot overshoot); texts up to MAX_RULE_TEXT characters;
 * - helpful/harmful only on a rule injected into this session's current burst or the user's own,
 *   once per rule per burst; on a rule for every user it is the user's vote (Playbook.feedback): it
 *   moves their own view at once and the rule for everyone only when CONSENSUS_USERS users agree,
 *   each user counted once, so nobody can drain or inflate a rule other users rely on.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { decayed, type Outcome } from "../../domain/learning/confidence.ts"
import { CONSENSUS_USERS } from "../../domain/learning/consensus.ts"
import { normaliseText } from "../../domain/learning/dedupe.ts"
import { cleanTags, LEARNING_PLUGIN, MAX_RULE_TEXT, normalTag, type SourcedRule, visibleTo } from "../../domain/learning/rule.ts"
import { type Tool, type ToolCallContext, ToolError } from "../../domain/tool.ts"
import { inputSchemaOf } from "../../domain/toolSchema.ts"
import { Diary } from "../../services/Diary.ts"
import { Playbook, type ProposalResult, type RuleFeedback } from "../../services/Playbook.ts"
import { PluginStore } from "../../services/PluginStore.ts"
import type { ToolSource } from "../../services/ToolCatalog.ts"
import * as ToolCatalogLayer from "./ToolCatalog.ts"

export const TOOL_NAME = "playbook"
/** The plugin the tool belongs to (the learning loop). */
export const PLUGIN_ID = LEARNING_PLUGIN
export const MAX_NEW_USER_RULES_PER_DAY = 20
export const MAX_USER_RULES = 200
/** Rules a search lists at most. */
export const MAX_SEARCH_RESULTS = 20
/** Sessions whose marks of the current burst are remembered (the oldest is forgotten first). */
const MARKS_REMEMBERED = 1_000

const Input = Schema.Struct({
  action: Schema.Literals(["search", "propose", "helpful", "harmful"]).annotate({
    description: "search rules, propose a new one, or mark one (id) helpful or harmful for this task."
  }),
  query: Schema.optionalKey(Schema.String.annotate({ description: "search: words the rule's text or tags contain (all of them)." })),
  tags: Schema.optionalKey(Schema.Array(Schema.String).annotate({
    description: "search: rules with any of these tags; propose: 1–6 lowercase topic words the rule applies to."
  })),
  text: Schema.optionalKey(Schema.String.annotate({ description: `propose: the rule, one short general sentence (at most ${MAX_RULE_TEXT} characters).` })),
  anti_pattern: Schema.optionalKey(Schema.Boolean.annotate({ description: "propose: true when the rule says what NOT to do." })),
  id: Schema.optionalKey(Schema.String.annotate({ description: "helpful/harmful: the rule's id (from the prompt's guidelines or search)." }))
})
const decode = Schema.decodeUnknownEffect(Input)

const fail = (reason: string) => new ToolError({ tool: TOOL_NAME, reason })

/** What a proposal did, as it happened: a duplicate of a rule for every user changes nothing in it. */
const proposed = ({ rule, created, addedTags }: ProposalResult): string => {
  if (created) return `Added ${rule.id} (for this user only; confidence ${rule.confidence.toFixed(2)}).`
  if (rule.user === undefined) {
    return `A rule for every user already says this: ${rule.id} (${rule.text}). Nothing was changed: a user's proposal never changes a rule every user is given.`
  }
  const added = addedTags.length === 0 ? "Nothing was changed." : `Added its tag${addedTags.length === 1 ? "" : "s"}: ${addedTags.join(", ")}.`
  return `You already have this rule: ${rule.id} (${rule.text}). ${added}`
}

/** What a mark did: to the rule itself, or (a rule for every user) to this user's view until enough users agree. */
const marked = (id: string, outcome: Outcome, f: RuleFeedback): string => {
  const how = outcome === "success" ? "helpful" : "harmful"
  const confidence = f.rule.confidence.toFixed(2)
  if (f.rule.user !== undefined || f.agreeing === 0) return `${id} marked ${how}; confidence now ${confidence}.`
  if (f.effect === "applied") return `${id} marked ${how}; ${f.agreeing} users agree, so it changed for every user: confidence now ${confidence}.`
  return `${id} marked ${how} for this user: confidence for them now ${confidence}. It changes for every user once ${CONSENSUS_USERS} users agree (${f.agreeing} so far).`
}

const describe = (s: SourcedRule, userId: string, now: number): string => {
  const r = s.rule
  const whose = r.user === userId ? "yours" : s.source
  const tags = r.tags.length === 0 ? "no tags" : `tags: ${r.tags.join(", ")}`
  return `${r.id} [${r.maturity.toUpperCase()}${r.antiPattern ? ", AVOID" : ""}] (confidence ${decayed(r, now).toFixed(2)}; ${tags}; ${whose}) ${r.text}`
}

export const playbookTool = (playbook: Playbook["Service"], diary: Diary["Service"], plugins: PluginStore["Service"]): Tool => {
  /** Rules marked per session and burst (`{session}\0{latest entry id}`): a mark counts once per burst. */
  const marks = new Map<string, Set<string>>()
  const markOnce = (burst: string, id: string): boolean => {
    let set = marks.get(burst)
    if (set === undefined) {
      set = new Set()
      marks.set(burst, set)
      for (const old of marks.keys()) {
        if (marks.size <= MARKS_REMEMBERED) break
        marks.delete(old)
      }
    }
    if (set.has(id)) return false
    set.add(id)
    return true
  }
  const storage = (e: { readonly message: string }) => fail(e.message)

  const search = (ctx: ToolCallContext, query: string | undefined, tags: ReadonlyArray<string> | undefined) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const words = normaliseText(query ?? "").split(" ").filter((w) => w !== "")
      const wanted = new Set((tags ?? []).map(normalTag).filter((t) => t !== ""))
      const found = (yield* playbook.view(ctx.agentId, ctx.userId).pipe(Effect.mapError(storage))).filter(({ rule }) => {
        if (!visibleTo(rule, ctx.userId)) return false
        if (wanted.size > 0 && !rule.tags.some((t) => wanted.has(normalTag(t)))) return false
        const hay = normaliseText(`${rule.text} ${rule.tags.join(" ")}`)
        return words.every((w) => hay.includes(w))
      }).sort((a, b) => decayed(b.rule, now) - decayed(a.rule, now) || a.rule.id.localeCompare(b.rule.id))
      if (found.length === 0) return "No playbook rule matches."
      const shown = found.slice(0, MAX_SEARCH_RESULTS).map((s) => describe(s, ctx.userId, now))
      return [...shown, ...(found.length > MAX_SEARCH_RESULTS ? [`(${found.length - MAX_SEARCH_RESULTS} more; narrow the search)`] : [])].join("\n")
    })

  const propose = (ctx: ToolCallContext, text: string | undefined, tags: ReadonlyArray<string>, antiPattern: boolean) =>
    Effect.gen(function*() {
      const line = (text ?? "").replace(/\s+/g, " ").trim()
      if (line === "") return yield* fail("give the rule's text")
      if (line.length > MAX_RULE_TEXT) return yield* fail(`the text is ${line.length} characters; at most ${MAX_RULE_TEXT}`)
      const result = yield* playbook.propose({
        agentId: ctx.agentId,
        user: ctx.userId,
        text: line,
        tags: cleanTags(tags),
        sourceEntries: [],
        antiPattern,
        limits: { perDay: MAX_NEW_USER_RULES_PER_DAY, total: MAX_USER_RULES }
      }).pipe(Effect.mapError((e) => fail(e._tag === "RuleRejected" ? e.reason : e.message)))
      return proposed(result)
    })

  const mark = (ctx: ToolCallContext, id: string | undefined, outcome: Outcome) =>
    Effect.gen(function*() {
      const ruleId = (id ?? "").trim()
      if (ruleId === "") return yield* fail("give the rule's id")
      const found = yield* playbook.get(ctx.agentId, ruleId).pipe(
        Effect.catchTag("RuleNotFound", () => Effect.succeed(undefined)),
        Effect.mapError(storage)
      )
      if (found === undefined || !visibleTo(found.rule, ctx.userId)) return yield* fail(`no rule "${ruleId}" (see action search)`)
      const injected = (yield* diary.openUses(ctx.sessionKey).pipe(Effect.mapError(storage))).some((u) => u.kind === "rule" && u.ref === ruleId)
      if (!injected && found.rule.user !== ctx.userId) {
        return yield* fail(`${ruleId} was not among this conversation's guidelines since the last reflection; only those (or the user's own rules) can be marked`)
      }
      const latest = yield* diary.latest(ctx.sessionKey).pipe(Effect.mapError(storage))
      const burst = `${ctx.sessionKey}\0${Option.match(latest, { onNone: () => "", onSome: (e) => e.id })}`
      if (!markOnce(burst, ruleId)) return yield* fail(`${ruleId} was already marked in this task`)
      const [updated] = yield* playbook.feedback(ctx.agentId, [ruleId], outcome, { user: ctx.userId }).pipe(Effect.mapError(storage))
      return updated === undefined ? `${ruleId} is gone.` : marked(ruleId, outcome, updated)
    })

  return {
    definition: {
      name: TOOL_NAME,
      description: [
        "Your playbook of rules learned from past work (the relevant ones are in your system prompt under",
        "\"Relevant Guidelines\"). search: find rules; propose: add a short, general, reusable rule you learned",
        "(no personal details; it applies to this user only); helpful / harmful: say whether a guideline given for",
        "this task helped or hurt, once per rule."
      ].join(" "),
      inputSchema: inputSchemaOf(Input)
    },
    execute: (raw, ctx) =>
      Effect.gen(function*() {
        const input = yield* decode(raw).pipe(Effect.mapError((e) => fail(`invalid input: ${e.message}`)))
        if (!(yield* plugins.enabledFor(PLUGIN_ID, ctx.agentId).pipe(Effect.mapError(storage)))) {
          return yield* fail("learning is off for this agent")
        }
        switch (input.action) {
          case "search":
            return yield* search(ctx, input.query, input.tags)
          case "propose":
            return yield* propose(ctx, input.text, input.tags ?? [], input.anti_pattern === true)
          case "helpful":
            return yield* mark(ctx, input.id, "success")
          case "harmful":
            return yield* mark(ctx, input.id, "failure")
        }
      })
  }
}

/** The playbook source: the tool when the plugin is on for the session's agent. */
export const source = Effect.gen(function*() {
  const plugins = yield* PluginStore
  const tool = playbookTool(yield* Playbook, yield* Diary, plugins)
  const out: ToolSource = {
    id: TOOL_NAME,
    // Learning switched on or off for the agent: its sessions get new runners, so the change applies next turn.
    version: (agentId) =>
      plugins.enabledFor(PLUGIN_ID, agentId).pipe(Effect.map((on) => (on ? "on" : "off")), Effect.orElseSucceed(() => "unreadable")),
    tools: (session) =>
      Effect.gen(function*() {
        if (!session.enabled(TOOL_NAME)) return []
        const on = yield* plugins.enabledFor(PLUGIN_ID, session.agentId).pipe(
          Effect.catch((e) => Effect.as(Effect.logWarning("playbook: plugin state unreadable, tool not offered", e), false))
        )
        return on ? [tool] : []
      })
  }
  return out
})

/** Registers the playbook tool (needs Playbook, Diary and PluginStore). */
export const layer = ToolCatalogLayer.register(source)
