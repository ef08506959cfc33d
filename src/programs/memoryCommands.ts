/**
 * `anna memory …`: inspect and operate memory from the terminal. Every subcommand takes `--json`
 * (stable shapes: the service results as they are) and `--help`.
 */
import { Console, Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CapabilityMissing } from "../domain/memory/errors.ts"
import { sessionRefFromKey } from "../domain/memory/session.ts"
import type { CompactionProgress, SearchHit, SearchScope } from "../domain/memory/types.ts"
import { compactionStopNotice } from "../domain/memory/stopNotice.ts"
import { verifySession } from "../domain/memory/verify.ts"
import { messageText } from "../domain/message.ts"
import { Compactor } from "../services/Compactor.ts"
import { Explorer } from "../services/Explorer.ts"
import { MemoryProvider } from "../services/MemoryProvider.ts"
import { MemoryStore } from "../services/MemoryStore.ts"
import { Embedder } from "../services/Embedder.ts"
import { MAX_SEARCH_HITS, Searcher } from "../services/Searcher.ts"
import { SessionManager } from "../services/SessionManager.ts"
import { Memory, memoryWith, summarizerLabel } from "./layers.ts"
import { exportJsonl } from "./exportJsonl.ts"
import { importJsonl } from "./importJsonl.ts"
import { setFlagsFromString } from "node:v8"
import { oneLine } from "../domain/text.ts"
import { iso, printJson, table, usageError } from "./output.ts"

const capability = <I, S>(service: import("effect").Context.Key<I, S>, name: string) =>
  Effect.flatMap(
    Effect.serviceOption(service),
    Option.match({ onNone: () => Effect.fail(new CapabilityMissing({ capability: name })), onSome: Effect.succeed })
  )

export class VerifyFailed extends Schema.TaggedError<VerifyFailed>()("VerifyFailed", {
  problems: Schema.Number,
  sessions: Schema.Number
}) {
  override get message() {
    return `verify found ${this.problems} problem(s) in ${this.sessions} session(s)`
  }
}

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const sessionKey = Argument.String("sessionKey").pipe(
  Argument.withDescription("Session key, e.g. agent1:telegram:42:dm")
)
const positiveInt = (name: string, description: string) =>
  Flag.Int(name).pipe(Flag.withDescription(description), Flag.filter((n) => n > 0, (n) => `--${name} must be positive, got ${n}`))

const sessions = Command.make("sessions", {
  agent: Flag.String("agent").pipe(Flag.withDescription("Only this agent's sessions"), Flag.optional),
  user: Flag.String("user").pipe(Flag.withDescription("Only this user's sessions"), Flag.optional),
  limit: positiveInt("limit", "At most this many sessions (newest first)").pipe(Flag.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const manager = yield* SessionManager
    const list = yield* manager.listInfo({
      agentId: Option.getOrUndefined(f.agent),
      userId: Option.getOrUndefined(f.user),
      limit: Option.getOrUndefined(f.limit)
    })
    if (f.json) return yield* printJson(list)
    if (list.length === 0) return yield* Console.log("No sessions.")
    yield* Console.log(table(
      ["SESSION", "AGENT", "USER", "MESSAGES", "UPDATED"],
      list.map((s) => [s.sessionKey, s.agentId || "-", s.userId || "-", String(s.messages), iso(s.updatedAt)])
    ))
  })).pipe(Command.withDescription("List stored sessions, most recently active first"))

/**
 * An import allocates fast (every line parsed, checked and encoded) while what it keeps is small (a
 * batch at a time), and V8 answers a high allocation rate by growing its young generation, which then
 * stays reserved: 100k messages of 476 bytes peaked at 250 MiB RSS for at most 30 MB of live heap.
 * Not growing it keeps that peak at 165–180 MiB in the same time, within noise (BENCHMARKS.md, issue
 * 11). The growth factor is read when the young generation would grow, so setting it here, in this
 * command's own process, takes effect (the size limits themselves are fixed at start-up).
 */
const keepYoungGenerationSmall = () => setFlagsFromString("--semi-space-growth-factor=1")

const importCmd = Command.make("import", {
  sessionKey,
  file: Argument.String("file").pipe(Argument.withDescription("JSONL file: one message per line")),
  agent: Flag.String("agent").pipe(Flag.withDescription("Owner agent (default: from the session key)"), Flag.optional),
  user: Flag.String("user").pipe(Flag.withDescription("Owner user (default: from the session key)"), Flag.optional),
  append: Flag.Boolean("append").pipe(
    Flag.withDescription("Add to a session that already has messages (refused otherwise)"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.sync(keepYoungGenerationSmall).pipe(Effect.andThen(importJsonl({
    session: sessionRefFromKey(f.sessionKey, {
      agentId: Option.getOrUndefined(f.agent),
      userId: Option.getOrUndefined(f.user)
    }),
    file: f.file,
    append: f.append
  }))).pipe(
    Effect.flatMap((r) =>
      f.json ? printJson(r) : Console.log(
        `Imported ${r.imported} messages into ${r.sessionKey} (seq ${r.firstSeq}–${r.lastSeq}) in ${
          (r.millis / 1000).toFixed(1)
        } s.`
      )
    ),
  )).pipe(
    Command.withDescription(
      "Import a transcript: one JSON object per line, {\"role\":\"user\"|\"assistant\"|\"tool_result\", \"content\": string or Anthropic-style blocks, \"ts\"?: ISO-8601}. The whole file is checked before anything is stored."
    )
  )

const exportCmd = Command.make("export", {
  sessionKey,
  jsonl: Flag.Boolean("jsonl").pipe(
    Flag.withDescription("The format: JSONL, one message per line (the default and only format; the flag says so in scripts)"),
    Flag.withDefault(true)
  ),
  output: Flag.String("output").pipe(Flag.withAlias("o"), Flag.withDescription("Write to FILE (atomically: complete or absent) instead of stdout"), Flag.optional),
  force: Flag.Boolean("force").pipe(Flag.withDescription("Replace --output FILE if it exists (refused otherwise)"), Flag.withDefault(false)),
  json
}, (f) =>
  Effect.gen(function*() {
    const output = Option.getOrUndefined(f.output)
    if (!f.jsonl) return yield* usageError(["anna", "memory", "export"], "JSONL is the only export format")
    if (output === undefined && f.json) {
      return yield* usageError(["anna", "memory", "export"], "--json describes the result of --output FILE; without it the export itself (JSONL) is what stdout gets")
    }
    const r = yield* exportJsonl({ sessionKey: f.sessionKey, output, force: f.force })
    if (output === undefined) return
    yield* f.json ? printJson(r) : Console.log(`Exported ${r.exported} messages of ${r.sessionKey} to ${output} in ${(r.millis / 1000).toFixed(1)} s.`)
  })).pipe(
    Command.withDescription(
      "Export a session as JSONL in the format anna memory import reads: one {\"role\", \"content\", \"ts\"} per line, every message with its tool calls and results, to stdout or --output FILE. Import it with anna memory import NEW_SESSION FILE."
    )
  )

const assemble = Command.make("assemble", {
  sessionKey,
  budget: positiveInt("budget", "Token budget of the context"),
  freshTail: Flag.Int("fresh-tail").pipe(
    Flag.withDescription("Newest messages always kept verbatim (default 20)"),
    Flag.filter((n) => n >= 0, () => "--fresh-tail must be 0 or more"),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const memory = yield* MemoryProvider
    const a = yield* memory.assemble(f.sessionKey, { budget: f.budget, freshTail: Option.getOrUndefined(f.freshTail) })
    if (f.json) return yield* printJson(a)
    yield* Console.log(
      `${a.messages.length} messages, ${a.tokens} of ${f.budget} tokens (${memory.name}; ${a.summaries} summaries, fresh tail ${a.freshTailMessages}, ${a.omittedItems} older items left out)`
    )
    for (const m of a.messages) yield* Console.log(`[${m.role}] ${oneLine(messageText(m), 160)}`)
  })).pipe(
    Command.withDescription("Show the context the model would get for a session within a token budget")
  )

const compact = Command.make("compact", {
  sessionKey,
  full: Flag.Boolean("full").pipe(
    Flag.withDescription("Repeat leaf and condensed passes until nothing is left (at most 10 iterations)"),
    Flag.withDefault(false)
  ),
  budget: positiveInt("budget", "Stop once the context is within 75 % of this budget").pipe(Flag.optional),
  maxSummaryCalls: Flag.Int("max-summary-calls").pipe(
    Flag.withDescription(
      "Spend guard for this run, instead of the agent's --summary-max-calls: summarizer calls allowed for the session in the agent's window, earlier runs in it included (a run it stops exits 1 and says so)"
    ),
    Flag.filter((n) => n >= 0, () => "--max-summary-calls must be 0 or more"),
    Flag.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const compactor = yield* capability(Compactor, "compaction")
    const summarizer = yield* summarizerLabel(f.sessionKey)
    if (!f.json) yield* Console.error(`summarizer: ${summarizer}`)
    let lastDraw = 0
    const onProgress = (p: CompactionProgress) =>
      Effect.sync(() => {
        const now = Date.now()
        if (now - lastDraw < 250 && p.step < p.steps) return
        lastDraw = now
        process.stderr.write(
          `compacting ${f.sessionKey}: pass ${p.pass} (${p.kind}) step ${p.step}/${p.steps}; ${p.leafSummaries} leaf + ${p.condensedSummaries} condensed summaries\n`
        )
      })
    const r = yield* compactor.compact(f.sessionKey, {
      full: f.full,
      budget: Option.getOrUndefined(f.budget),
      onProgress
    })
    const notice = compactionStopNotice(r, f.sessionKey)
    // A guard the user can raise refused work: not a silent success (exit 1, what was made is kept).
    if (r.stopReason === "spend_guard") process.exitCode = 1
    if (f.json) return yield* printJson({ ...r, summarizer, ...(notice === undefined ? {} : { notice }) })
    yield* Console.log(
      `${r.compacted ? "Compacted" : "Nothing compacted"}: ${r.leafSummaries} leaf + ${r.condensedSummaries} condensed summaries in ${r.passes} passes; context ${r.tokensBefore} → ${r.tokensAfter} tokens; stopped: ${r.stopReason}.`
    )
    if (notice !== undefined) yield* Console.error(notice)
  }).pipe(Effect.provide(memoryWith(Option.getOrUndefined(f.maxSummaryCalls))))).pipe(
    Command.withDescription(
      "Compact a session's context into summaries (incremental: one leaf + one condensed pass), with the configured summarization model, or the deterministic summarizer when no provider is configured"
    )
  )

const MAX_CONTEXT = 10

const seqOf = (h: SearchHit): string =>
  h.covers !== undefined ? `#${h.covers.firstSeq}–#${h.covers.lastSeq}` : h.seq === undefined ? "-" : `#${h.seq}`

/** `--context N`: each hit as a block, message hits between their neighbours. */
const hitBlock = (h: SearchHit, n: number): string => {
  const head = h.kind === "summary"
    ? `${n}. ${h.id}: summary of messages ${seqOf(h)} in ${h.sessionKey}, ${iso(h.covers?.earliestAt)} → ${iso(h.createdAt)}, score ${
      h.score.toPrecision(3)
    }`
    : `${n}. ${h.id}: message ${seqOf(h)} (${h.role ?? "?"}) in ${h.sessionKey}, ${iso(h.createdAt)}, score ${h.score.toPrecision(3)}`
  if (h.kind === "summary") return [head, `   ${oneLine(h.snippet, 160)}`, `   (anna memory expand ${h.id} shows what it was made from)`].join("\n")
  const around = h.context ?? []
  const line = (mark: string, seq: number, role: string, text: string) => `${mark} #${seq} ${role.padEnd(11)} ${oneLine(text, 140)}`
  return [
    head,
    ...around.filter((m) => m.seq < (h.seq ?? 0)).map((m) => line("    ", m.seq, m.role, m.text)),
    line("   >", h.seq ?? 0, h.role ?? "?", h.snippet),
    ...around.filter((m) => m.seq > (h.seq ?? 0)).map((m) => line("    ", m.seq, m.role, m.text))
  ].join("\n")
}

const search = Command.make("search", {
  query: Argument.String("query").pipe(
    Argument.withDescription("Words or a question; also \"exact phrase\", prefix*, AND, OR, NOT, role:ROLE, tool:NAME (README: Search syntax)")
  ),
  session: Flag.String("session").pipe(Flag.withDescription("Only this session"), Flag.optional),
  user: Flag.String("user").pipe(Flag.withDescription("Only this user's sessions"), Flag.optional),
  agent: Flag.String("agent").pipe(
    Flag.withDescription("Fuse with the nearest vectors of this agent's embedding model (default: the --session's agent; none: lexical only)"),
    Flag.optional
  ),
  limit: Flag.Int("limit").pipe(
    Flag.withDescription(`At most this many hits (default 10, at most ${MAX_SEARCH_HITS})`),
    Flag.filter((n) => n >= 1 && n <= MAX_SEARCH_HITS, (n) => `--limit must be from 1 to ${MAX_SEARCH_HITS}, got ${n}`),
    Flag.optional
  ),
  strict: Flag.Boolean("strict").pipe(
    Flag.withDescription("Every word must match, stop words included (default: ranked, best match of the words first)"),
    Flag.withDefault(false)
  ),
  context: Flag.Int("context").pipe(
    Flag.withDescription(`Show N messages before and after each message hit (0–${MAX_CONTEXT})`),
    Flag.filter((n) => n >= 0 && n <= MAX_CONTEXT, (n) => `--context must be between 0 and ${MAX_CONTEXT}, got ${n}`),
    Flag.optional
  ),
  includeMemoryCalls: Flag.Boolean("include-memory-calls").pipe(
    Flag.withDescription("Also search the memory tool's own calls and their results (left out by default; tool:memory implies it)"),
    Flag.withDefault(false)
  ),
  ownText: Flag.Boolean("own-text").pipe(
    Flag.withDescription("Rank each message on its own text only (default: together with its neighbouring turns, at a lower weight)"),
    Flag.withDefault(false)
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const searcher = yield* capability(Searcher, "search")
    const scope: SearchScope = Option.isSome(f.session)
      ? { _tag: "Session", sessionKey: f.session.value }
      : Option.isSome(f.user)
      ? { _tag: "User", userId: f.user.value }
      : { _tag: "All" }
    const context = Option.getOrElse(f.context, () => 0)
    // Dense retrieval: the agent named, else the session's; its embedding model embeds the query.
    const agentId = Option.isSome(f.agent)
      ? f.agent.value
      : Option.isSome(f.session)
      ? Option.getOrUndefined(Option.map(yield* (yield* MemoryStore).findConversation(f.session.value), (c) => c.agentId))
      : undefined
    const dense = f.strict || agentId === undefined ? undefined : yield* (yield* Embedder).queryVector(agentId, f.query)
    const hits = yield* searcher.search(f.query, {
      scope,
      limit: Option.getOrUndefined(f.limit),
      mode: f.strict ? "strict" : "ranked",
      context,
      includeMemoryCalls: f.includeMemoryCalls,
      neighbours: !f.ownText,
      ...(dense === undefined ? {} : { dense })
    })
    if (f.json) return yield* printJson(hits)
    if (hits.length === 0) return yield* Console.log("No matches.")
    if (context > 0) return yield* Console.log(hits.map((h, i) => hitBlock(h, i + 1)).join("\n\n"))
    yield* Console.log(table(
      ["SCORE", "KIND", "ID", "SESSION", "WHEN", "SEQ", "SNIPPET"],
      hits.map((h) => [
        h.score.toPrecision(3),
        h.similarity === undefined ? h.kind : `${h.kind}${h.matched.length === 0 ? " (meaning)" : " (+meaning)"}`,
        h.id,
        h.sessionKey,
        iso(h.createdAt),
        seqOf(h),
        oneLine(h.snippet, 120)
      ])
    ))
    if (!f.strict && hits.some((h) => h.kind === "message" && h.matched.length === 0 && h.score > 0 && h.hop === undefined)) {
      yield* Console.log("\nA message with nothing marked was found through the turns around it (--context 2 shows them; --own-text leaves such hits out).")
    }
    const hop = hits.find((h) => h.hop !== undefined)
    if (hop !== undefined) {
      yield* Console.log(`\n${hop.id} was found through the first hit's other words (${hop.hop?.join(", ")}), a second hop (--own-text leaves it out).`)
    }
    const summary = hits.find((h) => h.kind === "summary")
    if (summary !== undefined) {
      yield* Console.log(`\nA summary covers the messages under SEQ; anna memory expand ${summary.id} shows what it was made from.`)
    }
  })).pipe(Command.withDescription("Search messages and summaries: ranked by how well they answer the query (or --strict), best first"))

const summaryId = Argument.String("summaryId").pipe(Argument.withDescription("Summary id, e.g. sum_12"))

const describe = Command.make("describe", { summaryId, json }, (f) =>
  Effect.gen(function*() {
    const explorer = yield* capability(Explorer, "describe")
    const d = yield* explorer.describe(f.summaryId)
    if (f.json) return yield* printJson(d)
    yield* Console.log([
      `${d.id} (${d.kind}, depth ${d.depth}, ${d.mode}) in ${d.sessionKey}${d.live ? ", live" : ""}`,
      `tokens ${d.tokens} from ${d.sourceTokens}; messages ${d.sourceRange.firstSeq}–${d.sourceRange.lastSeq} (${d.sourceRange.messages}); ${
        iso(d.earliestAt)
      } → ${iso(d.latestAt)}`,
      `parents: ${d.parents.join(", ") || "-"}`,
      `children: ${d.kind === "condensed" ? d.childSummaries.join(", ") : `${d.childMessages} messages`}`,
      "",
      d.content
    ].join("\n"))
  })).pipe(Command.withDescription("Show a summary: metadata, lineage, source range, text"))

const expand = Command.make("expand", {
  summaryId,
  cursor: Flag.Int("cursor").pipe(Flag.withDescription("Continue from a previous page's next cursor"), Flag.optional),
  maxTokens: positiveInt("max-tokens", "Token limit of the page (default 4000)").pipe(Flag.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const explorer = yield* capability(Explorer, "expand")
    const r = yield* explorer.expand(f.summaryId, {
      cursor: Option.getOrUndefined(f.cursor),
      maxTokens: Option.getOrUndefined(f.maxTokens)
    })
    if (f.json) return yield* printJson(r)
    for (const it of r.items) {
      yield* Console.log(
        it.kind === "message"
          ? `--- ${it.id} #${it.seq} ${it.message.role} ${iso(it.createdAt)}\n${messageText(it.message)}`
          : `--- ${it.id} depth ${it.depth} ${iso(it.earliestAt)} → ${iso(it.latestAt)}\n${it.content}`
      )
    }
    yield* Console.log(
      r.nextCursor === null
        ? `(${r.totalItems} items, end)`
        : `(${r.totalItems} items; more with: anna memory expand ${r.summaryId} --cursor ${r.nextCursor})`
    )
  })).pipe(
    Command.withDescription("Show what a summary was made from: messages of a leaf, summaries of a condensed one")
  )

const verify = Command.make("verify", {
  sessionKey: Argument.String("sessionKey").pipe(
    Argument.withDescription("Only this session (default: every session and the database indexes)"),
    Argument.optional
  ),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const targets = Option.isSome(f.sessionKey)
      ? [yield* store.getConversation(f.sessionKey.value)]
      : yield* store.listConversations({})
    const problems: Array<string> = Option.isSome(f.sessionKey) ? [] : [...yield* store.integrityCheck]
    let messages = 0
    for (const c of targets) {
      const input = yield* store.verifyInput(c.id, c.sessionKey)
      messages += input.messages.length
      problems.push(...verifySession(input))
    }
    if (f.json) yield* printJson({ ok: problems.length === 0, sessions: targets.length, messages, problems })
    else if (problems.length === 0) {
      yield* Console.log(`OK: ${targets.length} session(s), ${messages} messages, lossless and DAG intact.`)
    } else for (const p of problems) yield* Console.error(p)
    if (problems.length > 0) return yield* new VerifyFailed({ problems: problems.length, sessions: targets.length })
  })).pipe(
    Command.withDescription("Check the lossless invariant and DAG integrity; exits 1 listing problems")
  )

const stats = Command.make("stats", { sessionKey, json }, (f) =>
  Effect.gen(function*() {
    const memory = yield* MemoryProvider
    const s = yield* memory.stats(f.sessionKey)
    if (f.json) return yield* printJson(s)
    yield* Console.log(table(["", ""], [
      ["session", s.sessionKey],
      ["agent / user", `${s.agentId || "-"} / ${s.userId || "-"}`],
      ["messages", `${s.messages} (${s.messageTokens} tokens)`],
      // JSON keeps maxDepth -1 for "none" (a number, as documented); the text says it in words.
      ["summaries", s.summaries === 0 ? "0 (no summaries yet)" : `${s.summaries} (max depth ${s.maxDepth})`],
      ["live context", `${s.contextItems} items, ${s.contextTokens} tokens`],
      ["first / last", `${iso(s.firstMessageAt)} / ${iso(s.lastMessageAt)}`]
    ]).split("\n").slice(1).join("\n"))
  })).pipe(Command.withDescription("Statistics of one session"))

export class ConfirmationRequired extends Schema.TaggedError<ConfirmationRequired>()("ConfirmationRequired", {
  action: Schema.String
}) {
  override get message() {
    return `${this.action} cannot be undone; pass --yes to do it`
  }
}

const deleteCmd = Command.make("delete", {
  sessionKey,
  yes: Flag.Boolean("yes").pipe(Flag.withDescription("Confirm: the session's messages and summaries are deleted for good"), Flag.withDefault(false)),
  json
}, (f) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    // Checked first, so a mistyped key says so even without --yes.
    const c = yield* store.loadConversation(f.sessionKey)
    if (!f.yes) {
      const s = yield* store.stats(c.id)
      return yield* new ConfirmationRequired({
        action: `deleting ${f.sessionKey} (${s.messages} messages, ${s.summaries} summaries)`
      })
    }
    const r = yield* store.deleteConversation(f.sessionKey)
    if (f.json) return yield* printJson({ deleted: r })
    yield* Console.log(`Deleted ${r.sessionKey}: ${r.messages} messages, ${r.summaries} summaries.`)
  })).pipe(
    Command.withDescription("Delete a session for good (its messages, summaries and search entries); needs --yes")
  )

export const memoryCommand = Command.make("memory").pipe(
  Command.withDescription("Inspect and operate memory (sessions, import, export, delete, assemble, compact, search, describe, expand, verify, stats)"),
  Command.withSubcommands([sessions, importCmd, exportCmd, deleteCmd, assemble, compact, search, describe, expand, verify, stats]),
  Command.provide(Memory)
)
