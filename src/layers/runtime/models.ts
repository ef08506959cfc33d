/**
 * Which models a chat user may run an agent on. `/model NAME` stores a choice per chat, and any
 * chat user can type it, so the operator's list decides (`anna agent set X --allowed-models`): the
 * agent's own model, the ids in `allowedModels`, and — when that list holds "*" — what the agent's
 * provider lists. A choice is checked when it is made and again at every turn, so a list the
 * operator tightens later also stops choices made before.
 */
import { type Agent, ANY_PROVIDER_MODEL } from "../../domain/config/agent.ts"

/**
 * Whether `model` may run `agent`'s turns. '' (the agent's own model) and `agent.model` always may.
 * With "*" in the list, a model must be in `listed` (the provider's models); when `listed` is not
 * given, "*" is taken on trust — for a turn, whose choice was checked against the listing when
 * the user made it, so that no turn needs a listing call.
 */
export const modelAllowed = (agent: Agent, model: string, listed?: ReadonlyArray<string>): boolean =>
  model === "" ||
  model === agent.model ||
  // "*" is the operator's wildcard, never a model name a user can pick.
  (model !== ANY_PROVIDER_MODEL &&
    (agent.allowedModels.includes(model) ||
      (agent.allowedModels.includes(ANY_PROVIDER_MODEL) && (listed === undefined || listed.includes(model)))))

/**
 * The model a turn runs on: the chat's choice when it is still allowed, else `agentModel` (the
 * agent's model, or its provider's default when the agent names none).
 */
export const turnModel = (agent: Agent, agentModel: string, chosen: string, listed?: ReadonlyArray<string>): string =>
  chosen !== "" && modelAllowed(agent, chosen, listed) ? chosen : agentModel

/**
 * What `/model` offers, in order and without repeats: the agent's model first, then the operator's
 * ids, then (with "*") the provider's listing.
 */
export const allowedModels = (agent: Agent, agentModel: string, listed: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...new Set([
    agentModel,
    ...agent.allowedModels.filter((m) => m !== ANY_PROVIDER_MODEL),
    ...(agent.allowedModels.includes(ANY_PROVIDER_MODEL) ? listed : [])
  ])
]
