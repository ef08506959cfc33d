/**
 * `/api/agents` handlers: `anna agent list|show|set|enable|disable|remove` over AgentStore, with the
 * CLI's parsing (`parseModelRef`, `parsePolicy`) and the store's checks. `PUT` creates an agent
 * awaiting a model (enabled once it has one) when there is none, as `anna agent set` does.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { BadRequest } from "../../domain/admin/security.ts"
import { describePolicy, EVERYONE, parsePolicy } from "../../domain/access/policy.ts"
import { type Agent, embeddingModelOf, formatModelRef, parseModelRef } from "../../domain/config/agent.ts"
import type { AgentChanges } from "../../domain/admin/groups/agents.ts"
import { type AgentPatch, AgentStore } from "../../services/AgentStore.ts"
import { answer } from "./errors.ts"

const embeddingOf = (a: Agent): string | null => {
  const ref = embeddingModelOf(a)
  return ref === undefined ? null : formatModelRef(ref)
}

export const agentView = (a: Agent) => ({
  id: a.id,
  name: a.name,
  model: a.providerId === null ? null : formatModelRef({ providerId: a.providerId, model: a.model }),
  summaryModel: a.summaryProviderId === null ? null : formatModelRef({ providerId: a.summaryProviderId, model: a.summaryModel }),
  summaryMaxCalls: a.summaryMaxCalls,
  summaryWindowSeconds: a.summaryWindowSeconds,
  embeddingModel: embeddingOf(a),
  systemPrompt: a.systemPrompt,
  sandboxImage: a.sandboxImage,
  sandboxNetwork: a.sandboxNetwork,
  sandboxMemoryMb: a.sandboxMemoryMb,
  sandboxCpus: a.sandboxCpus,
  sandboxPids: a.sandboxPids,
  sandboxWorkspace: a.sandboxWorkspace,
  sandboxDiskMb: a.sandboxDiskMb,
  allowedModels: a.allowedModels,
  turnTimeoutSeconds: a.turnTimeoutSeconds,
  contextTokens: a.contextTokens,
  maxOutputTokens: a.maxOutputTokens ?? 0,
  tools: a.tools,
  maxTurns: a.maxTurns,
  enabled: a.enabled,
  awaitingModel: a.awaitingModel === true,
  access: describePolicy(a.access ?? EVERYONE),
  createdAt: a.createdAt,
  updatedAt: a.updatedAt
})

const modelRef = (field: string, text: string) => {
  const ref = parseModelRef(text)
  return ref === undefined ? Effect.fail(BadRequest.of(`${field} takes PROVIDER or PROVIDER/MODEL, e.g. openai/gpt-4.1-mini`)) : Effect.succeed(ref)
}

/** The body of `PUT /api/agents/:id` as a store patch, parsed as the CLI parses its flags. */
export const agentPatch = (c: typeof AgentChanges.Type) =>
  Effect.gen(function*() {
    const model = c.model === undefined ? undefined : yield* modelRef("model", c.model)
    const summary = c.summaryModel === undefined || c.summaryModel === null ? undefined : yield* modelRef("summaryModel", c.summaryModel)
    // As `--embedding-model`: null, "" or "none" clears it; otherwise PROVIDER/MODEL (a model is needed).
    const embeddingText = c.embeddingModel === undefined ? undefined : (c.embeddingModel ?? "").trim()
    const clearsEmbedding = embeddingText !== undefined && (embeddingText === "" || embeddingText.toLowerCase() === "none")
    const embedding = embeddingText === undefined || clearsEmbedding ? undefined : parseModelRef(embeddingText)
    if (embeddingText !== undefined && !clearsEmbedding && (embedding === undefined || embedding.model === "")) {
      return yield* BadRequest.of("embeddingModel takes PROVIDER/MODEL, e.g. openai/text-embedding-3-small (or null: lexical search only)")
    }
    const access = c.access === undefined ? undefined : parsePolicy(c.access)
    if (access !== undefined && access._tag === "Failure") return yield* BadRequest.of(access.failure)
    const patch: AgentPatch = {
      ...(c.name === undefined ? {} : { name: c.name }),
      ...(c.systemPrompt === undefined ? {} : { systemPrompt: c.systemPrompt }),
      ...(model === undefined ? {} : { providerId: model.providerId, model: model.model }),
      ...(summary === undefined ? {} : { summaryProviderId: summary.providerId, summaryModel: summary.model }),
      ...(c.summaryModel === null ? { summaryProviderId: null, summaryModel: "" } : {}),
      ...(c.summaryMaxCalls === undefined ? {} : { summaryMaxCalls: c.summaryMaxCalls }),
      ...(c.summaryWindowSeconds === undefined ? {} : { summaryWindowSeconds: c.summaryWindowSeconds }),
      ...(clearsEmbedding ? { embeddingProviderId: null, embeddingModel: "" } : {}),
      ...(embedding === undefined ? {} : { embeddingProviderId: embedding.providerId, embeddingModel: embedding.model }),
      ...(c.sandboxImage === undefined ? {} : { sandboxImage: c.sandboxImage }),
      ...(c.sandboxNetwork === undefined ? {} : { sandboxNetwork: c.sandboxNetwork }),
      ...(c.sandboxMemoryMb === undefined ? {} : { sandboxMemoryMb: c.sandboxMemoryMb }),
      ...(c.sandboxCpus === undefined ? {} : { sandboxCpus: c.sandboxCpus }),
      ...(c.sandboxPids === undefined ? {} : { sandboxPids: c.sandboxPids }),
      ...(c.sandboxWorkspace === undefined ? {} : { sandboxWorkspace: c.sandboxWorkspace }),
      ...(c.sandboxDiskMb === undefined ? {} : { sandboxDiskMb: c.sandboxDiskMb }),
      ...(c.allowedModels === undefined ? {} : { allowedModels: c.allowedModels }),
      ...(c.turnTimeoutSeconds === undefined ? {} : { turnTimeoutSeconds: c.turnTimeoutSeconds }),
      ...(c.contextTokens === undefined ? {} : { contextTokens: c.contextTokens }),
      ...(c.maxOutputTokens === undefined ? {} : { maxOutputTokens: c.maxOutputTokens }),
      ...(c.tools === undefined ? {} : { tools: c.tools }),
      ...(c.maxTurns === undefined ? {} : { maxTurns: c.maxTurns }),
      ...(access !== undefined && access._tag === "Success" ? { access: access.success } : {})
    }
    return patch
  })

export const layer = HttpApiBuilder.group(AdminApi, "agents", Effect.fn(function*(handlers) {
  const store = yield* AgentStore

  return handlers
    .handle("list", () => answer(Effect.map(store.list, (all) => all.map(agentView))))
    .handle("get", ({ params }) => answer(Effect.map(store.get(params.id), agentView)))
    .handle("set", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        const patch = yield* agentPatch(payload)
        const before = yield* store.get(params.id).pipe(Effect.option)
        const agent = Option.isSome(before)
          ? yield* store.update(params.id, patch)
          : yield* store.create(params.id, { ...patch, awaitingModel: true })
        return agentView(agent)
      })))
    .handle("enable", ({ params }) => answer(Effect.map(store.update(params.id, { enabled: true, awaitingModel: false }), agentView)))
    .handle("disable", ({ params }) => answer(Effect.map(store.update(params.id, { enabled: false, awaitingModel: false }), agentView)))
    .handle("remove", ({ params }) => answer(store.remove(params.id)))
}))
