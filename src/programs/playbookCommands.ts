/**
 * `anna playbook list|show|feedback|sweep|review|apply|context|add|promote|remove|export|import` (issue 15):
 * the operator's view of the playbook rules, global (`$ANNA_HOME/playbook.yaml`, the default) or one
 * agent's (`--agent A`: its own rules, and for list/show/context the global ones it does not shadow).
 * On PostgreSQL the rules are rows of the playbook_rules table (issue 28): `export` prints one
 * playbook's rules as the YAML its file would hold (or writes it to --output FILE: atomically, mode
 * 0600, never through a link), and `import FILE` checks a YAML file as the file reader does (a
 * mistake is a usage error with its line, and nothing changes) and then replaces that playbook's
 * rules with it in one update — the way to edit them by hand; both work the same on SQLite's files.
 * `context` prints exactly the text that would be injected for some tags (and with `--json` why
 * each rule was or was not chosen). Rule text and tags are shown terminal-safe. `feedback` is the
 * operator's word on a rule: it applies at once, for every user (a chat user's is a vote, issue 23).
 */
import { Clock, Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { randomBytes } from "node:crypto"
import { constants, promises as fs } from "node:fs"
import { basename, dirname, join, resolve } from "node:path"
import { InvalidConfig } from "../domain/config/errors.ts"
import { DEMOTION_CANDIDATE_BELOW, decayed, REMOVAL_CANDIDATE_BELOW } from "../domain/learning/confidence.ts"
import { CONSENSUS_USERS, type Tally } from "../domain/learning/consensus.ts"
import { PlaybookWriteFailed } from "../domain/learning/errors.ts"
import { normalTag, type SourcedRule, visibleTo } from "../domain/learning/rule.ts"
import { stringifyPlaybook } from "../domain/learning/yaml.ts"
import { terminalJson, terminalSafe } from "../layers/channels/terminal/render.ts"
import { explainSelection } from "../layers/learning/playbookExplain.ts"
import { makeFiles, MAX_PLAYBOOK_BYTES } from "../layers/learning/playbookFile.ts"
import * as YamlPlaybook from "../layers/learning/YamlPlaybook.ts"
import { oneLine } from "../domain/text.ts"
import { AgentStore } from "../services/AgentStore.ts"
import { ConfigStore } from "../services/ConfigStore.ts"
import { Playbook } from "../services/Playbook.ts"
import { Stores } from "./layers.ts"
import { iso, table, usageError } from "./output.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON instead of text"), Flag.withDefault(false))
const agent = Flag.String("agent").pipe(
  Flag.withDescription("The agent whose playbook this is (default: the global playbook, $ANNA_HOME/playbook.yaml or on PostgreSQL the table playbook_rules)"),
  Flag.optional
)
const user = (what: string) => Flag.String("user").pipe(Flag.withDescription(what), Flag.optional)
const id = Argument.String("id").pipe(Argument.withDescription("The rule's id (anna playbook list)"))
const printJson = (value: unknown) => Console.log(terminalJson(value, 2))
const splitTags = (s: string) => s.split(",").map((t) => t.trim()).filter((t) => t !== "")

/** The agent named by --agent, which must exist; undefined without it. */
const agentOf = (flag: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(flag)) return undefined
    return (yield* (yield* AgentStore).get(flag.value)).id
  })

const userOf = (flag: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(flag)) return undefined
    if (Option.isNone(yield* (yield* ConfigStore).getUser(flag.value))) return yield* new InvalidConfig({ reason: `no user "${flag.value}" (see: anna user list)` })
    return flag.value
  })

const where = (agentId: string | undefined) => (agentId === undefined ? "the global playbook" : `agent ${agentId}'s playbook`)

/** A rule for --json: its fields as in the file, with where it is from and its confidence now. */
const ruleJson = (s: SourcedRule, now: number) => ({
  id: s.rule.id,
  source: s.source,
  user: s.rule.user ?? null,
  text: s.rule.text,
  confidence: s.rule.confidence,
  confidenceNow: Math.round(decayed(s.rule, now) * 10_000) / 10_000,
  maturity: s.rule.maturity,
  successCount: s.rule.successCount,
  failureCount: s.rule.failureCount,
  antiPattern: s.rule.antiPattern,
  tags: s.rule.tags,
  sourceEntries: s.rule.sourceEntries,
  createdAt: iso(s.rule.createdAt),
  lastAppliedAt: s.rule.lastAppliedAt === null ? null : iso(s.rule.lastAppliedAt)
})

const list = Command.make("list", {
  agent,
  user: user("Only the rules this user is given (theirs and those for every user)"),
  tag: Flag.String("tag").pipe(Flag.withDescription("Only rules with this tag (case-insensitive)"), Flag.optional),
  json
}, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const userId = Option.getOrUndefined(f.user)
    const tag = Option.map(f.tag, normalTag)
    const now = yield* Clock.currentTimeMillis
    const rules = (yield* (yield* Playbook).list(agentId)).filter((s) =>
      (userId === undefined || visibleTo(s.rule, userId)) &&
      (Option.isNone(tag) || s.rule.tags.includes(tag.value))
    )
    if (f.json) return yield* printJson(rules.map((s) => ruleJson(s, now)))
    if (rules.length === 0) return yield* Console.log(`No rules in ${where(agentId)}${agentId === undefined ? "" : " or the global one"} (anna playbook add).`)
    yield* Console.log(terminalSafe(table(
      ["ID", "FROM", "SCOPE", "MATURITY", "CONF", "NOW", "S/F", "AVOID", "TAGS", "TEXT"],
      rules.map((s) => [
        s.rule.id,
        s.source,
        s.rule.user ?? "all",
        s.rule.maturity,
        s.rule.confidence.toFixed(2),
        decayed(s.rule, now).toFixed(2),
        `${s.rule.successCount}/${s.rule.failureCount}`,
        s.rule.antiPattern ? "yes" : "-",
        oneLine(s.rule.tags.join(",") || "-", 30),
        oneLine(s.rule.text, 70)
      ])
    )))
  })).pipe(Command.withDescription("List the rules: the global ones, or an agent's with the global ones it does not shadow (--agent); --user, --tag filter"))

/** Users' feedback on a shared rule, in words: how many said what, and how many of them are in the rule. */
const votesText = (t: Tally): string =>
  t.success + t.failure === 0
    ? "none yet"
    : `${t.failure} bad, ${t.success} good (each user's latest); ${t.counted} counted into the rule, which moves once ${CONSENSUS_USERS} users agree`

const show = Command.make("show", { id, agent, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const playbook = yield* Playbook
    const found = yield* playbook.get(agentId, f.id)
    const votes = yield* playbook.votes(agentId, f.id)
    const now = yield* Clock.currentTimeMillis
    const paths = playbook.paths(agentId)
    const file = found.source === "agent" ? (paths.agent ?? paths.global) : paths.global
    if (f.json) return yield* printJson({ ...ruleJson(found, now), file, votes })
    const r = found.rule
    yield* Console.log(terminalSafe([
      `Rule ${r.id}`,
      table(["", ""], [
        ["text", r.text],
        ["file", file],
        ["scope", r.user === undefined ? "every user" : `user ${r.user} only (anna playbook promote)`],
        ["maturity", r.maturity],
        ["confidence", `${r.confidence.toFixed(4)} stored, ${decayed(r, now).toFixed(4)} now`],
        ["successes", String(r.successCount)],
        ["failures", String(r.failureCount)],
        ["anti-pattern", r.antiPattern ? "yes" : "no"],
        ["users' feedback", r.user === undefined ? votesText(votes) : "applies to the rule (it is the user's own)"],
        ["tags", r.tags.join(", ") || "-"],
        ["source entries", r.sourceEntries.join(", ") || "-"],
        ["created", iso(r.createdAt)],
        ["last applied", iso(r.lastAppliedAt)]
      ])
    ].join("\n")))
  })).pipe(Command.withDescription("Every field of one rule, and the file it lives in (on PostgreSQL: the table and scope)"))

const feedback = Command.make("feedback", {
  id,
  outcome: Argument.String("outcome").pipe(Argument.withDescription("good or bad")),
  agent,
  json
}, (f) =>
  Effect.gen(function*() {
    const word = f.outcome.trim().toLowerCase()
    const outcome = word === "good" ? "success" : word === "bad" ? "failure" : undefined
    if (outcome === undefined) return yield* usageError(["anna", "playbook", "feedback"], `say good or bad, not "${f.outcome}"`)
    const agentId = yield* agentOf(f.agent)
    const playbook = yield* Playbook
    const found = yield* playbook.get(agentId, f.id)
    const [done] = yield* playbook.feedback(agentId, [f.id], outcome, "operator")
    const r = done?.rule ?? found.rule
    if (f.json) return yield* printJson({ ...ruleJson({ rule: r, source: found.source }, yield* Clock.currentTimeMillis), outcome })
    const counts = `${r.successCount} success${r.successCount === 1 ? "" : "es"}, ${r.failureCount} failure${r.failureCount === 1 ? "" : "s"}`
    const whom = r.user === undefined ? "every user" : `user ${r.user}`
    yield* Console.log(`${r.id}: ${outcome} recorded for ${whom}; confidence now ${r.confidence.toFixed(2)} (${counts}).`)
  })).pipe(Command.withDescription("The operator's feedback on a rule (good or bad): applies at once, for everyone the rule is for"))

const sweep = Command.make("sweep", { agent, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const report = yield* (yield* Playbook).sweep(agentId)
    if (f.json) return yield* printJson(report)
    yield* Console.log([
      `Swept ${where(agentId)}: ${report.promoted} promoted, ${report.demoted} demoted, ${report.flagged} flagged.`,
      `Demotion candidates (confidence now < ${DEMOTION_CANDIDATE_BELOW}): ${report.demotionCandidates.join(", ") || "none"}`,
      `Removal candidates (< ${REMOVAL_CANDIDATE_BELOW}, more failures than successes): ${report.removalCandidates.join(", ") || "none"}`
    ].join("\n"))
  })).pipe(Command.withDescription("Maintenance: settle maturities against decayed confidence, flag demotion and removal candidates"))

const review = Command.make("review", { agent, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const proposals = yield* (yield* Playbook).review(agentId)
    if (f.json) {
      return yield* printJson(proposals.map((p) => ({
        id: p.original.id,
        failures: p.original.failureCount,
        successes: p.original.successCount,
        text: p.original.text,
        inverted: { id: p.inverted.id, text: p.inverted.text }
      })))
    }
    if (proposals.length === 0) return yield* Console.log(`No inversion proposals in ${where(agentId)}.`)
    const lines = proposals.map((p) =>
      `${p.original.id}: ${p.original.failureCount} failures vs ${p.original.successCount} successes\n  now:      ${p.original.text}\n  proposed: ${p.inverted.text}`
    )
    const flag = agentId === undefined ? "" : ` --agent ${agentId}`
    yield* Console.log(terminalSafe(`${lines.join("\n")}\nApprove with: anna playbook apply <id>...${flag}`))
  })).pipe(Command.withDescription("Rules that keep failing, each with the AVOID rule proposed in its place (nothing is changed)"))

const apply = Command.make("apply", {
  ids: Argument.String("id").pipe(Argument.withDescription("Ids of rules with a proposal (anna playbook review)"), Argument.variadic({ min: 1 })),
  agent,
  json
}, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const applied = yield* (yield* Playbook).apply(agentId, f.ids)
    if (f.json) return yield* printJson(applied.map((p) => ({ id: p.original.id, deprecated: true, inverted: p.inverted.id, text: p.inverted.text })))
    for (const p of applied) yield* Console.log(terminalSafe(`${p.original.id} deprecated (confidence 0.00); added ${p.inverted.id}: ${p.inverted.text}`))
  })).pipe(Command.withDescription("Apply inversion proposals: each original goes to confidence 0, its AVOID rule is added"))

const context = Command.make("context", {
  tags: Flag.String("tags").pipe(Flag.withDescription("The conversation's tags, comma-separated (e.g. docker,ci)")),
  agent: Flag.String("agent").pipe(Flag.withDescription("The agent (default: the default agent)"), Flag.optional),
  user: user("The user the turn is for (default: none, so only rules for every user count)"),
  json
}, (f) =>
  Effect.gen(function*() {
    const agents = yield* AgentStore
    const agentId = Option.isSome(f.agent)
      ? (yield* agents.get(f.agent.value)).id
      : Option.getOrUndefined(Option.map(yield* agents.defaultAgent, (a) => a.id))
    if (agentId === undefined) return yield* new InvalidConfig({ reason: "there is no enabled agent to take as the default: give --agent A" })
    const userId = Option.getOrElse(f.user, () => "")
    const tags = splitTags(f.tags)
    const playbook = yield* Playbook
    const injected = yield* playbook.context({ agentId, userId, tags })
    if (f.json) {
      const considered = explainSelection(yield* playbook.view(agentId, userId), userId, tags, yield* Clock.currentTimeMillis)
      return yield* printJson({
        agent: agentId,
        user: userId === "" ? null : userId,
        tags,
        text: injected.text,
        tokens: injected.tokenCount,
        chosen: [...injected.rules, ...injected.antiPatterns].map((s) => s.rule.id),
        considered
      })
    }
    // Exactly the injected text: nothing added (a newline only for a person at a terminal).
    if (injected.text !== "") yield* Effect.sync(() => process.stdout.write(injected.text + (process.stdout.isTTY === true ? "\n" : "")))
  })).pipe(Command.withDescription("Print exactly the rules section that would be injected for these tags (--json: why each rule was or wasn't chosen)"))

const add = Command.make("add", {
  text: Flag.String("text").pipe(Flag.withDescription("The rule, one line (at most 500 characters)")),
  // Required: a rule is injected only into a conversation that has one of its tags (src/domain/learning/context.ts).
  tags: Flag.String("tags").pipe(Flag.withDescription("Its tags, comma-separated (at least one): it is injected when the conversation has one of them"), Flag.optional),
  agent,
  user: user("Only for this user (default: every user)"),
  antiPattern: Flag.Boolean("anti-pattern").pipe(Flag.withDescription("A pattern to avoid (listed under Patterns to Avoid)"), Flag.withDefault(false)),
  json
}, (f) =>
  Effect.gen(function*() {
    const tags = Option.match(f.tags, { onNone: () => [], onSome: splitTags })
    if (tags.length === 0) {
      return yield* usageError(
        ["anna", "playbook", "add"],
        "--tags is needed: a rule is injected only into conversations that have one of its tags, so an untagged rule is never injected"
      )
    }
    const agentId = yield* agentOf(f.agent)
    const userId = yield* userOf(f.user)
    const { rule, created } = yield* (yield* Playbook).propose({
      agentId,
      user: userId,
      text: f.text,
      tags,
      sourceEntries: [],
      antiPattern: f.antiPattern
    })
    if (f.json) return yield* printJson({ ...ruleJson({ rule, source: agentId === undefined ? "global" : "agent" }, yield* Clock.currentTimeMillis), created })
    yield* Console.log(terminalSafe(created ? `Added ${rule.id} to ${where(agentId)}.` : `Already there as ${rule.id} (its tags now: ${rule.tags.join(", ") || "none"}).`))
  })).pipe(Command.withDescription("Add a rule by hand (a near duplicate of one the same users see is merged into it)"))

const promote = Command.make("promote", {
  id,
  agent: Flag.String("agent").pipe(Flag.withDescription("The agent whose rule it is")),
  global: Flag.Boolean("global").pipe(Flag.withDescription("Also move it to the global playbook (every agent)"), Flag.withDefault(false)),
  json
}, (f) =>
  Effect.gen(function*() {
    const agentId = (yield* (yield* AgentStore).get(f.agent)).id
    const rule = yield* (yield* Playbook).promote(agentId, f.id, { global: f.global })
    if (f.json) return yield* printJson({ id: rule.id, user: null, global: f.global })
    yield* Console.log(`${rule.id} now applies to every user${f.global ? " of every agent (moved to the global playbook)" : ` of ${agentId}`}.`)
  })).pipe(Command.withDescription("Make a rule learned from one user's conversations apply to every user (--global: to every agent)"))

const remove = Command.make("remove", { id, agent, json }, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const rule = yield* (yield* Playbook).remove(agentId, f.id)
    yield* f.json ? printJson({ id: rule.id, removed: true }) : Console.log(`Removed ${rule.id} from ${where(agentId)}.`)
  })).pipe(Command.withDescription("Remove a rule from the global playbook, or an agent's (--agent)"))

const codeOf = (e: unknown): string | undefined =>
  e !== null && typeof e === "object" && "code" in e && typeof e.code === "string" ? e.code : undefined

/**
 * Writes `text` to `output` through a private temp file beside it (mode 0600, O_EXCL), synced and
 * renamed over it: complete or absent. A link, folder, FIFO or device at `output` is refused.
 */
const writeOutput = (output: string, text: string) =>
  Effect.tryPromise({
    try: async () => {
      const target = resolve(output)
      const existing = await fs.lstat(target).catch((e: unknown) => {
        if (codeOf(e) === "ENOENT") return undefined
        throw e
      })
      if (existing !== undefined && !existing.isFile()) throw new Error("it is not a regular file (a link, folder, FIFO or device is not written through)")
      const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`)
      const handle = await fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
      let renamed = false
      try {
        try {
          await handle.writeFile(text, "utf8")
          await handle.sync()
        } finally {
          await handle.close()
        }
        await fs.rename(temp, target)
        renamed = true
      } finally {
        if (!renamed) await fs.unlink(temp).catch(() => undefined)
      }
    },
    catch: (e) => new PlaybookWriteFailed({ path: output, reason: codeOf(e) ?? (e instanceof Error ? e.message : String(e)) })
  })

const exportCmd = Command.make("export", {
  agent,
  output: Flag.String("output").pipe(
    Flag.withAlias("o"),
    Flag.withDescription("Write to FILE (atomically, mode 0600; a link is refused) instead of stdout"),
    Flag.optional
  )
}, (f) =>
  Effect.gen(function*() {
    const agentId = yield* agentOf(f.agent)
    const { rules, invalid } = yield* (yield* Playbook).rules(agentId)
    // PostgreSQL rows that do not decode: left out, said on stderr (importing the file deletes them).
    for (const row of invalid) {
      yield* Console.error(terminalSafe(`anna: rule "${row.id}" of ${where(agentId)} is left out: ${row.reason} (importing this export removes it; add it back fixed)`))
    }
    const text = stringifyPlaybook(rules)
    if (Option.isNone(f.output)) return yield* Effect.sync(() => process.stdout.write(text))
    yield* writeOutput(f.output.value, text)
    yield* Console.log(`Exported ${rules.length} rule${rules.length === 1 ? "" : "s"} of ${where(agentId)} to ${f.output.value}.`)
  })).pipe(Command.withDescription(
    "Print one playbook's rules (the global ones, or an agent's own with --agent) as the YAML its file holds, to edit by hand and load with anna playbook import"
  ))

const importCmd = Command.make("import", {
  file: Argument.String("file").pipe(Argument.withDescription(`A playbook YAML file (as anna playbook export writes; at most ${MAX_PLAYBOOK_BYTES} bytes)`)),
  agent,
  json
}, (f) =>
  Effect.gen(function*() {
    const path = ["anna", "playbook", "import"]
    // Checked whole before anything is changed: a mistake is a usage error with its line.
    const missing = yield* Effect.promise(() => fs.lstat(f.file).then(() => false, (e: unknown) => codeOf(e) === "ENOENT"))
    if (missing) return yield* usageError(path, `${f.file}: no such file (nothing was imported)`)
    const rules = yield* makeFiles().read(f.file).pipe(
      Effect.catchTag("PlaybookInvalid", (e) => usageError(path, `${e.path}${e.line > 0 ? `:${e.line}` : ""}: ${e.reason} (nothing was imported)`))
    )
    const agentId = yield* agentOf(f.agent)
    const report = yield* (yield* Playbook).replace(agentId, rules)
    if (f.json) return yield* printJson({ file: f.file, agent: agentId ?? null, ...report })
    const ids = (list: ReadonlyArray<string>) => (list.length === 0 ? "" : ` (${list.join(", ")})`)
    yield* Console.log(terminalSafe([
      `Imported ${f.file} into ${where(agentId)}: ${rules.length} rule${rules.length === 1 ? "" : "s"}.`,
      `${report.added.length} added${ids(report.added)}, ${report.changed.length} changed${ids(report.changed)}, ${report.removed.length} removed${
        ids(report.removed)
      }, ${report.unchanged} unchanged.`,
      ...(report.invalid.length === 0 ? [] : [`Rows that did not decode, replaced: ${report.invalid.join(", ")}.`])
    ].join("\n")))
  })).pipe(Command.withDescription(
    "Replace one playbook's rules (the global ones, or an agent's own with --agent) with a YAML file's, checked whole first (a mistake is reported with its line, and nothing changes)"
  ))

export const playbookCommand = Command.make("playbook").pipe(
  Command.withDescription("Playbook rules: list, show, feedback, sweep, review, apply, context, add, promote, remove, export, import"),
  Command.withSubcommands([list, show, feedback, sweep, review, apply, context, add, promote, remove, exportCmd, importCmd]),
  Command.provide(YamlPlaybook.layer.pipe(Layer.provideMerge(Stores)))
)
