/**
 * `/api/agents`: agents as `anna agent list|show|set|enable|disable|remove` manage them. `PUT
 * /api/agents/:id` is `anna agent set`: it creates the agent when there is none (disabled until it
 * has a usable model) and changes only what the body names. Models are `PROVIDER/MODEL` (or
 * `PROVIDER` for its default), access is `everyone | users:ID,… | attr:KEY=VALUE,…` as `--access`.
 * A change applies from the agent's next turn.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors } from "../security.ts"

export const WorkspaceMode = Schema.Literals(["user", "shared"])
export const NetworkPolicy = Schema.Literals(["disabled", "allow_all"])

export const AgentView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** `PROVIDER/MODEL`, `PROVIDER` (its default model), or null (none yet). */
  model: Schema.NullOr(Schema.String),
  /** The cheaper summary tier, or null (the main model summarizes). */
  summaryModel: Schema.NullOr(Schema.String),
  summaryMaxCalls: Schema.Number,
  summaryWindowSeconds: Schema.Number,
  /** Dense retrieval's `PROVIDER/MODEL` (an OpenAI-compatible /v1/embeddings), or null (lexical search only). */
  embeddingModel: Schema.NullOr(Schema.String),
  systemPrompt: Schema.String,
  sandboxImage: Schema.String,
  sandboxNetwork: NetworkPolicy,
  sandboxMemoryMb: Schema.Number,
  sandboxCpus: Schema.Number,
  sandboxPids: Schema.Number,
  sandboxWorkspace: WorkspaceMode,
  sandboxDiskMb: Schema.Number,
  allowedModels: Schema.Array(Schema.String),
  turnTimeoutSeconds: Schema.Number,
  /** 0 = the default (128,000). */
  contextTokens: Schema.Number,
  maxOutputTokens: Schema.Number,
  /** null = every tool. */
  tools: Schema.NullOr(Schema.Array(Schema.String)),
  maxTurns: Schema.Number,
  enabled: Schema.Boolean,
  /** Disabled only until it has a model. */
  awaitingModel: Schema.Boolean,
  access: Schema.String,
  createdAt: Schema.Number,
  updatedAt: Schema.Number
})

/** What `PUT` may change; absent fields stay as they are. */
export const AgentChanges = Schema.Struct({
  name: Schema.optional(Schema.String),
  systemPrompt: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  /** null: summarize with the main model again. */
  summaryModel: Schema.optional(Schema.NullOr(Schema.String)),
  summaryMaxCalls: Schema.optional(Schema.Number),
  summaryWindowSeconds: Schema.optional(Schema.Number),
  /** `PROVIDER/MODEL` as `--embedding-model`; null or "" (or "none"): lexical search only. A change re-embeds in the background. */
  embeddingModel: Schema.optional(Schema.NullOr(Schema.String)),
  sandboxImage: Schema.optional(Schema.String),
  sandboxNetwork: Schema.optional(NetworkPolicy),
  sandboxMemoryMb: Schema.optional(Schema.Number),
  sandboxCpus: Schema.optional(Schema.Number),
  sandboxPids: Schema.optional(Schema.Number),
  sandboxWorkspace: Schema.optional(WorkspaceMode),
  sandboxDiskMb: Schema.optional(Schema.Number),
  allowedModels: Schema.optional(Schema.Array(Schema.String)),
  turnTimeoutSeconds: Schema.optional(Schema.Number),
  contextTokens: Schema.optional(Schema.Number),
  maxOutputTokens: Schema.optional(Schema.Number),
  tools: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  maxTurns: Schema.optional(Schema.Number),
  access: Schema.optional(Schema.String)
})

export const RemovedAgent = Schema.Struct({
  agentId: Schema.String,
  usersDefaulted: Schema.Number,
  bindings: Schema.Number,
  chatStates: Schema.Number
})

const id = { id: Schema.String }

export class AgentsGroup extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(AgentView), error: CommonErrors }),
    HttpApiEndpoint.get("get", "/:id", { params: id, success: AgentView, error: CommonErrors }),
    HttpApiEndpoint.put("set", "/:id", { params: id, payload: AgentChanges, success: AgentView, error: CommonErrors }),
    HttpApiEndpoint.post("enable", "/:id/enable", { params: id, success: AgentView, error: CommonErrors }),
    HttpApiEndpoint.post("disable", "/:id/disable", { params: id, success: AgentView, error: CommonErrors }),
    HttpApiEndpoint.delete("remove", "/:id", { params: id, success: RemovedAgent, error: CommonErrors })
  )
  .middleware(AdminAuth)
  .prefix("/agents")
{}
