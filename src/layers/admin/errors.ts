/**
 * Our tagged failures as the admin API's error responses: a missing thing is 404, one that exists
 * or is in use 409, a refused value 400 (its reason says what to change), storage 500 (logged, and
 * answered without the database's words).
 */
import { Effect } from "effect"
import { BadRequest, Conflict, Forbidden, NotFound, ServerError, TooManyRequests, Unauthorized } from "../../domain/admin/security.ts"

type Tagged = { readonly _tag?: string | undefined; readonly message: string }

export type ApiFailure = BadRequest | NotFound | Conflict | ServerError | Forbidden | Unauthorized | TooManyRequests

const isApiFailure = (e: unknown): e is ApiFailure =>
  e instanceof BadRequest || e instanceof NotFound || e instanceof Conflict || e instanceof ServerError ||
  e instanceof Forbidden || e instanceof Unauthorized || e instanceof TooManyRequests

const NOT_FOUND = new Set(["AgentNotFound", "ProviderNotFound", "PluginNotFound", "PriceNotFound", "NotFound", "JobNotFound", "SkillNotFound", "McpServerNotFound", "RuleNotFound", "DiaryEntryNotFound"])
const CONFLICT = new Set(["ProviderExists", "ProviderInUse", "Conflict", "RemovalUnfinished", "SkillExists", "McpServerExists"])

/** One failure as the API answers it. */
export const toApiFailure = (e: Tagged): Effect.Effect<never, ApiFailure> => {
  if (isApiFailure(e)) return Effect.fail(e)
  const tag = e._tag ?? ""
  if (NOT_FOUND.has(tag)) return Effect.fail(NotFound.of(e.message))
  if (CONFLICT.has(tag)) return Effect.fail(Conflict.of(e.message))
  if (tag === "StorageError") {
    return Effect.logWarning(`admin API: ${e.message}`).pipe(Effect.andThen(Effect.fail(ServerError.of("anna could not read or write its database; see the gateway's log"))))
  }
  return Effect.fail(BadRequest.of(e.message))
}

/** Maps every failure of `self` with `toApiFailure`. */
export const answer = <A, E extends Tagged, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, ApiFailure, R> =>
  Effect.catch(self, toApiFailure)

