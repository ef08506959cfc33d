/**
 * `/api/playbook`: the procedural memory's rules as `anna playbook list|show|feedback|sweep|review|
 * apply|promote|remove` manage them. `agent` names the playbook: an agent's (its own rules, and for
 * list/show the global ones it does not shadow) or, left out, the global one. A rule row says where
 * it lives (`agent`, null for the global playbook), which is what show, feedback and remove take.
 *
 * An admin is the operator: every rule, users' votes on shared rules, their own feedback (applied at
 * once, for everyone), review and apply of inversion proposals, sweep, promote, remove.
 *
 * A `user` has "my rules": on the agents they may use (the agent's access policy) with learning on,
 * their own rules and the rules for every user, as the chat's `playbook` tool searches them and with
 * their own view of shared rules (their feedback not yet in the rule); they may remove only their own
 * rules (403 for a rule every user is given). A rule they are not given is a 404, as one that does not
 * exist. Feedback, promote, review, apply and sweep are the operator's (403).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors, UserAllowed } from "../security.ts"

export const RuleView = Schema.Struct({
  id: Schema.String,
  /** The playbook it lives in: the agent's id, or null for the global playbook. */
  agent: Schema.NullOr(Schema.String),
  /** The user it is for (learned from their conversations), or null: every user. */
  user: Schema.NullOr(Schema.String),
  text: Schema.String,
  /** As stored (for a `user`: their own view of a shared rule). */
  confidence: Schema.Number,
  /** With the decay of the days since it was last applied. */
  confidenceNow: Schema.Number,
  maturity: Schema.Literals(["nascent", "established", "proven"]),
  successCount: Schema.Number,
  failureCount: Schema.Number,
  antiPattern: Schema.Boolean,
  tags: Schema.Array(Schema.String),
  sourceEntries: Schema.Array(Schema.String),
  createdAt: Schema.Number,
  lastAppliedAt: Schema.NullOr(Schema.Number)
})
export type RuleView = typeof RuleView.Type

/** Users' latest feedback on a rule for every user, and how many of them are counted into it. */
export const VotesView = Schema.Struct({
  success: Schema.Number,
  failure: Schema.Number,
  counted: Schema.Number,
  /** Distinct users whose agreeing feedback moves the rule for everyone. */
  needed: Schema.Number
})

export const RuleDetail = Schema.Struct({
  rule: RuleView,
  /** Users' votes (a rule for every user; null for a user's own rule, which takes their feedback at once). */
  votes: Schema.NullOr(VotesView),
  /** The file it lives in (admins only; null for a `user`). */
  file: Schema.NullOr(Schema.String)
})

export const ProposalView = Schema.Struct({
  /** The rule that keeps failing (what `apply` takes). */
  id: Schema.String,
  agent: Schema.NullOr(Schema.String),
  text: Schema.String,
  failures: Schema.Number,
  successes: Schema.Number,
  /** The AVOID rule that would replace it. */
  inverted: Schema.Struct({ id: Schema.String, text: Schema.String })
})

export const SweepView = Schema.Struct({
  promoted: Schema.Number,
  demoted: Schema.Number,
  flagged: Schema.Number,
  demotionCandidates: Schema.Array(Schema.String),
  removalCandidates: Schema.Array(Schema.String)
})

const id = { id: Schema.String }
/** The playbook: an agent's, or (left out) the global one. */
const where = { agent: Schema.optional(Schema.String) }
const Agent = Schema.optionalKey(Schema.String)

export class PlaybookGroup extends HttpApiGroup.make("playbook")
  .add(
    HttpApiEndpoint.get("list", "/rules", {
      query: {
        ...where,
        /** Only the rules this user is given (theirs and those for every user); admins only. */
        user: Schema.optional(Schema.String),
        /** `shared`: rules for every user; `personal`: rules scoped to one user. */
        scope: Schema.optional(Schema.Literals(["shared", "personal"])),
        tag: Schema.optional(Schema.String),
        /** Words the rule's text or tags contain (all of them, case-insensitive). */
        q: Schema.optional(Schema.String)
      },
      success: Schema.Array(RuleView),
      error: CommonErrors
    }).annotate(UserAllowed, true),
    HttpApiEndpoint.get("show", "/rules/:id", { params: id, query: where, success: RuleDetail, error: CommonErrors }).annotate(UserAllowed, true),
    /** From the file `agent` names (left out: the global one); a `user` removes only their own rules. */
    HttpApiEndpoint.delete("remove", "/rules/:id", { params: id, query: where, success: RuleView, error: CommonErrors }).annotate(UserAllowed, true),
    /** The operator's word: applies at once, for everyone the rule is for. */
    HttpApiEndpoint.post("feedback", "/rules/:id/feedback", {
      params: id,
      payload: Schema.Struct({ agent: Agent, outcome: Schema.Literals(["good", "bad"]) }),
      success: RuleView,
      error: CommonErrors
    }),
    /** A rule learned from one user's conversations, for every user of the agent (`global`: of every agent). */
    HttpApiEndpoint.post("promote", "/rules/:id/promote", {
      params: id,
      payload: Schema.Struct({ agent: Schema.String, global: Schema.optionalKey(Schema.Boolean) }),
      success: RuleView,
      error: CommonErrors
    }),
    /** Rules that keep failing, each with the AVOID rule proposed in its place (nothing is changed). */
    HttpApiEndpoint.get("review", "/review", { query: where, success: Schema.Array(ProposalView), error: CommonErrors }),
    /** Applies these proposals (an id without one: 404, nothing applied). */
    HttpApiEndpoint.post("apply", "/apply", {
      payload: Schema.Struct({ agent: Agent, ids: Schema.Array(Schema.String).check(Schema.isMinLength(1)) }),
      success: Schema.Array(ProposalView),
      error: CommonErrors
    }),
    /** Settles maturities against the decayed confidence and lists the candidates (one file). */
    HttpApiEndpoint.post("sweep", "/sweep", { payload: Schema.Struct({ agent: Agent }), success: SweepView, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/playbook")
{}
