/**
 * The sessions/usage/chat tests' setup until test/support/adminHarness.ts serves the whole admin
 * API: the real runtime (SQLite, LCM memory, provider clients on the fake LLM server) behind the
 * real admin auth (accounts, bearer tokens) and these three groups, served on 127.0.0.1 port 0 and
 * called through the typed client. The API here is AdminApi's id with only these groups, so the
 * group layers are exactly the ones the gateway serves.
 */
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiClient } from "effect/http-api"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { ChatGroup } from "../../../src/domain/admin/groups/chat.ts"
import { SessionsGroup } from "../../../src/domain/admin/groups/sessions.ts"
import { UsageGroup } from "../../../src/domain/admin/groups/usage.ts"
import * as AdminAuth from "../../../src/layers/admin/AdminAuth.ts"
import * as ChatApi from "../../../src/layers/admin/ChatApi.ts"
import * as SessionsApi from "../../../src/layers/admin/SessionsApi.ts"
import * as SqliteAccounts from "../../../src/layers/admin/SqliteAccounts.ts"
import * as UsageApi from "../../../src/layers/admin/UsageApi.ts"
import { serve } from "../../../src/layers/channels/http/server.ts"
import { Accounts, type Role } from "../../../src/services/Accounts.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { join } from "node:path"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { fastTransport } from "../providers/contract.ts"

export class TestApi extends HttpApi.make("anna-admin").add(SessionsGroup).add(UsageGroup).add(ChatGroup).prefix("/api") {}

const routes = HttpApiBuilder.layer(TestApi).pipe(
  Layer.provide(Layer.mergeAll(SessionsApi.layer, UsageApi.layer, ChatApi.layer).pipe(Layer.provide(AdminAuth.layer))),
  Layer.provide(NodeHttpServer.layerHttpServices)
)

/**
 * runtimeStack's runtime (test/support/runtimeStack.ts) with runners kept for an hour, so whether a
 * session is live is up to the test, not to the idle reaper's timing.
 */
const runtime = (home: string) =>
  Compose.agentRuntime({ runnerIdle: "1 hour", configPoll: "100 millis" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(Sqlite.layer(join(home, "anna.db")))
  )

/** The runtime on `home` with Accounts and the three groups served on an ephemeral port. */
export const adminStack = (home: string) =>
  serve(routes, { port: 0 }).pipe(
    Layer.provideMerge(SqliteAccounts.layer),
    Layer.provideMerge(runtime(home))
  )

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
    return yield* HttpApiClient.make(TestApi, {
      baseUrl: url,
      transformClient: token === undefined ? undefined : HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
    })
  }).pipe(Effect.provide(FetchHttpClient.layer))
