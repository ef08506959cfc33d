/**
 * What the sessions, usage and chat tests add to test/support/adminHarness.ts: the harness's stack
 * (the gateway's one HTTP server with the admin API, real SQLite, LCM memory, provider clients on the
 * fake LLM server) with its services in the test's context, accounts of any role with a bearer
 * token, and the typed client (over the API's own declaration) for a token or none.
 */
import { Effect } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { AdminApi } from "../../../src/domain/admin/api.ts"
import { Accounts, type Role } from "../../../src/services/Accounts.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { adminStack } from "../../support/adminHarness.ts"
import { tempHome } from "../../support/runtimeStack.ts"

/** Runs `body` on the harness's stack on a fresh ANNA_HOME (its path given), all closed after. */
export const withAdmin = <A, E, R>(body: (home: string) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const home = yield* tempHome
    return yield* body(home).pipe(Effect.provide(adminStack(home)))
  }))

/** A user with an account of `role` and a bearer token scoped to it. */
export const account = (userId: string, role: Role) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    yield* accounts.create({ userId, password: "correct horse battery", role })
    return yield* accounts.issueToken(userId, "test", role)
  })

/** The typed client, authenticated with `token` (none: anonymous). */
export const clientFor = (token?: string) =>
  Effect.gen(function*() {
    const { url } = yield* HttpAddress
    return yield* HttpApiClient.make(AdminApi, {
      baseUrl: url,
      transformClient: token === undefined ? undefined : HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
    })
  }).pipe(Effect.provide(FetchHttpClient.layer))
