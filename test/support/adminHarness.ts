/**
 * The admin API's tests' shared setup: a gateway's worth of runtime on a fresh ANNA_HOME (real
 * SQLite, LCM memory, provider clients on a fast transport), Accounts, and the gateway's one HTTP
 * server (the OpenAI-compatible channel + the admin API + the web console) on 127.0.0.1 port 0, as
 * `HttpChannel.layerWith(AdminRoutes.layer())` serves it in the gateway.
 *
 * It makes two accounts — `root` (admin) and `alice` (user) — logs both in through the API (their
 * cookie and CSRF token), issues each a bearer token, and hands out a typed client
 * (`HttpApiClient` over the API's own declaration) per way of calling: anonymous, cookie session
 * (with or without the CSRF header) and bearer. Every response body the harness's clients and
 * `fetch` receive is recorded in `bodies`, for the "no secret in any response" checks.
 */
import { Context, Effect, Layer, Scope } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AdminApi } from "../../src/domain/admin/api.ts"
import {
  BadRequest,
  Conflict,
  CSRF_HEADER,
  Forbidden,
  NotFound,
  ServerError,
  SESSION_COOKIE,
  TooManyRequests,
  Unauthorized
} from "../../src/domain/admin/security.ts"
import * as AdminRoutes from "../../src/layers/admin/routes.ts"
import * as SqliteAccounts from "../../src/layers/admin/SqliteAccounts.ts"
import * as UserRemoval from "../../src/layers/admin/UserRemoval.ts"
import * as SqliteDiary from "../../src/layers/learning/SqliteDiary.ts"
import * as SqliteRuleVotes from "../../src/layers/learning/SqliteRuleVotes.ts"
import * as SqliteSkillStats from "../../src/layers/learning/SqliteSkillStats.ts"
import * as YamlPlaybook from "../../src/layers/learning/YamlPlaybook.ts"
import * as SqliteJobStore from "../../src/layers/scheduler/SqliteJobStore.ts"
import * as HttpChannel from "../../src/layers/channels/HttpChannel.ts"
import { Accounts } from "../../src/services/Accounts.ts"
import { AppConfig } from "../../src/services/AppConfig.ts"
import { HttpAddress } from "../../src/services/HttpAddress.ts"
import { runtimeStack } from "./runtimeStack.ts"
import * as ProviderClients from "../../src/layers/providers/SdkProviderRegistry.ts"
import { fastTransport } from "../layers/providers/contract.ts"
import * as SqlitePluginStore from "../../src/layers/config/SqlitePluginStore.ts"
import * as SkillRanking from "../../src/layers/learning/SkillRanking.ts"
import * as FsSkills from "../../src/layers/skills/FsSkills.ts"
import * as McpProbe from "../../src/layers/mcp/McpProbe.ts"
import * as SqliteMcpServers from "../../src/layers/mcp/SqliteMcpServers.ts"

export const ADMIN = { user: "root", password: "root-password-1234" } as const
export const USER = { user: "alice", password: "alice-password-5678" } as const

export type AdminClient = Effect.Success<ReturnType<typeof makeClient>>

const makeClient = (url: string, fetch: typeof globalThis.fetch, headers: Record<string, string>) =>
  HttpApiClient.make(AdminApi, {
    baseUrl: url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.setHeaders(headers))
  }).pipe(
    Effect.provide(FetchHttpClient.layer),
    Effect.provideService(FetchHttpClient.Fetch, fetch)
  )

/** How a client authenticates. */
export interface Credentials {
  readonly cookie?: string | undefined
  readonly csrfToken?: string | undefined
  readonly bearer?: string | undefined
  /** Extra headers on every request (a wrong CSRF token, say). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

export interface Session {
  readonly cookie: string
  readonly csrfToken: string
  /** The whole Set-Cookie header of the login. */
  readonly setCookie: string
}

export interface AdminHarness {
  readonly url: string
  readonly home: string
  /** Every response body received through the harness (clients and `fetch`). */
  readonly bodies: Array<string>
  readonly adminSession: Session
  readonly userSession: Session
  readonly adminToken: string
  readonly userToken: string
  readonly anonymous: AdminClient
  /** Cookie session with its CSRF header. */
  readonly admin: AdminClient
  readonly user: AdminClient
  readonly adminBearer: AdminClient
  readonly userBearer: AdminClient
  /** A typed client with these credentials. */
  readonly client: (credentials: Credentials) => Effect.Effect<AdminClient>
  /** A raw request (recorded like the clients'). */
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  /** Headers of these credentials, for raw requests. */
  readonly headersOf: (credentials: Credentials) => Record<string, string>
  /** Logs in through the API; the cookie and CSRF token. */
  readonly login: (username: string, password: string) => Promise<Session>
  /** The stack's services (Accounts, the stores, the runtime), for `Effect.provide`. */
  readonly services: Context.Context<StackServices>
}

const headersOf = (c: Credentials): Record<string, string> => ({
  ...(c.cookie === undefined ? {} : { cookie: `${SESSION_COOKIE}=${c.cookie}` }),
  ...(c.csrfToken === undefined ? {} : { [CSRF_HEADER]: c.csrfToken }),
  ...(c.bearer === undefined ? {} : { authorization: `Bearer ${c.bearer}` }),
  ...c.headers
})

/** The stack on `home` with the HTTP server on port 0 (`webRoot` for the console's files). */
export const adminStack = (home: string, options: { readonly webRoot?: string | undefined } = {}) =>
  HttpChannel.layerWith(AdminRoutes.layer(), { port: 0, notFound: AdminRoutes.notFound(options.webRoot) }).pipe(
    Layer.provideMerge(SqliteAccounts.layer),
    // The removal's stores as the gateway has them (its learning stores come with the runtime there).
    Layer.provideMerge(UserRemoval.layer.pipe(
      Layer.provide(Layer.mergeAll(SqliteJobStore.layer, SqliteDiary.layer, SqliteSkillStats.layer, SqliteRuleVotes.layer, YamlPlaybook.layer)),
      Layer.provide(AppConfig.at(home))
    )),
    // The playbook and diary groups' stores (the gateway's come with its runtime; the same layers, so shared with the removal).
    Layer.provideMerge(Layer.merge(SqliteDiary.layer, YamlPlaybook.layer).pipe(Layer.provide(AppConfig.at(home)))),
    // The skills and MCP groups' services as the gateway has them (its Skills and SkillStats come with
    // the learning runtime; the bare runtime here has no AppConfig, so no skills of its own).
    Layer.provideMerge(Layer.merge(
      SkillRanking.layer.pipe(Layer.provideMerge(Layer.merge(FsSkills.layer, SqliteSkillStats.layer))),
      McpProbe.layer.pipe(Layer.provideMerge(SqliteMcpServers.layer))
    ).pipe(Layer.provide(AppConfig.at(home)))),
    Layer.provideMerge(Layer.merge(ProviderClients.layer(fastTransport), SqlitePluginStore.layer)),
    Layer.provideMerge(runtimeStack(home))
  )

export type StackServices = Layer.Success<ReturnType<typeof adminStack>>

/**
 * Starts the stack in the current scope (its home removed with it) and logs the two accounts in.
 * `setup` runs on the stack's services before the accounts are made (providers, agents…).
 */
export const startAdminHarness = (options: { readonly webRoot?: string | undefined } = {}) =>
  Effect.gen(function*() {
    const home = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "anna-admin-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const scope = yield* Scope.Scope
    const services = yield* Layer.buildWithScope(adminStack(home, options), scope)
    const url = Context.get(services, HttpAddress).url
    const accounts = Context.get(services, Accounts)
    yield* accounts.create({ userId: ADMIN.user, password: ADMIN.password, role: "admin" }).pipe(Effect.orDie)
    yield* accounts.create({ userId: USER.user, password: USER.password, role: "user" }).pipe(Effect.orDie)

    const bodies: Array<string> = []
    const recordingFetch: typeof globalThis.fetch = async (input, init) => {
      const response = await globalThis.fetch(input, init)
      const type = response.headers.get("content-type") ?? ""
      // Streams are recorded as they end; everything else before the caller reads it.
      if (type.includes("event-stream")) void response.clone().text().then((t) => bodies.push(t), () => undefined)
      else bodies.push(await response.clone().text())
      return response
    }
    const fetch = (path: string, init?: RequestInit) => recordingFetch(`${url}${path}`, init)

    const login = async (username: string, password: string): Promise<Session> => {
      const response = await fetch("/api/auth/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username, password })
      })
      if (response.status !== 200) throw new Error(`login of ${username} answered ${response.status}: ${await response.text()}`)
      const setCookie = response.headers.get("set-cookie") ?? ""
      const cookie = new RegExp(`${SESSION_COOKIE}=([^;]*)`).exec(setCookie)?.[1] ?? ""
      const body = (await response.json()) as { csrfToken: string }
      return { cookie, csrfToken: body.csrfToken, setCookie }
    }

    const client = (credentials: Credentials) => makeClient(url, recordingFetch, headersOf(credentials))

    const adminSession = yield* Effect.promise(() => login(ADMIN.user, ADMIN.password))
    const userSession = yield* Effect.promise(() => login(USER.user, USER.password))
    const adminToken = yield* accounts.issueToken(ADMIN.user, "harness", "admin").pipe(Effect.orDie)
    const userToken = yield* accounts.issueToken(USER.user, "harness", "user").pipe(Effect.orDie)

    const harness: AdminHarness = {
      url,
      home,
      bodies,
      adminSession,
      userSession,
      adminToken,
      userToken,
      anonymous: yield* client({}),
      admin: yield* client({ cookie: adminSession.cookie, csrfToken: adminSession.csrfToken }),
      user: yield* client({ cookie: userSession.cookie, csrfToken: userSession.csrfToken }),
      adminBearer: yield* client({ bearer: adminToken }),
      userBearer: yield* client({ bearer: userToken }),
      client,
      fetch,
      headersOf,
      login,
      services
    }
    return harness
  })

/** The harness as a service, for `layer(harnessLayer(), { excludeTestServices: true })` (one stack per file). */
export class Harness extends Context.Service<Harness, AdminHarness>()("test/AdminHarness") {}

export const harnessLayer = (options: { readonly webRoot?: string | undefined } = {}) => Layer.effect(Harness, startAdminHarness(options))

/** The status of a failed typed-client call (an API error's, else the HTTP response's), or "ok". */
export const outcome = <A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<number | "ok", never, R> =>
  call.pipe(
    Effect.as("ok" as const),
    Effect.catch((e: unknown) => Effect.succeed(statusOf(e)))
  )

const statusOf = (e: unknown): number => {
  if (e instanceof BadRequest) return 400
  if (e instanceof Unauthorized) return 401
  if (e instanceof Forbidden) return 403
  if (e instanceof NotFound) return 404
  if (e instanceof Conflict) return 409
  if (e instanceof TooManyRequests) return 429
  if (e instanceof ServerError) return 500
  const response = typeof e === "object" && e !== null ? (e as { response?: { status?: unknown } }).response : undefined
  return typeof response?.status === "number" ? response.status : -1
}
