/**
 * The admin API's routes (every group's handlers, the AdminAuth middleware, `/api/openapi.json`),
 * `GET /metrics` for an admin (./metricsRoute.ts) and the web console's files, as one route layer
 * for the gateway's HTTP server (see `HttpChannel.definitionWith`). Needs the stores, Accounts and
 * ProviderRegistry; reads Channels (the running gateway's channel states) when it is there.
 */
import { Layer } from "effect"
import type { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { AdminApi, OPENAPI_PATH } from "../../domain/admin/api.ts"
import * as AdminAuth from "./AdminAuth.ts"
import * as AgentHandlers from "./agentHandlers.ts"
import * as AuthHandlers from "./authHandlers.ts"
import * as ChannelHandlers from "./channelHandlers.ts"
import * as ConfigHandlers from "./configHandlers.ts"
import * as ProviderHandlers from "./providerHandlers.ts"
import * as TokenHandlers from "./tokenHandlers.ts"
import * as UserHandlers from "./userHandlers.ts"
import * as ChatApi from "./ChatApi.ts"
import * as SessionsApi from "./SessionsApi.ts"
import * as UsageApi from "./UsageApi.ts"
import * as ScheduleHandlers from "./scheduleHandlers.ts"
import * as SkillHandlers from "./skillHandlers.ts"
import * as McpHandlers from "./mcpHandlers.ts"
import * as PlaybookHandlers from "./playbookHandlers.ts"
import * as DiaryHandlers from "./diaryHandlers.ts"
import * as MetricsRoute from "./metricsRoute.ts"
import * as WebConsole from "./WebConsole.ts"

/** Every group's handlers. */
const handlers = Layer.mergeAll(
  AuthHandlers.layer,
  ProviderHandlers.layer,
  AgentHandlers.layer,
  ChannelHandlers.layer,
  UserHandlers.usersLayer,
  TokenHandlers.layer,
  ConfigHandlers.bindingsLayer,
  ConfigHandlers.pluginsLayer,
  ConfigHandlers.settingsLayer,
  SessionsApi.layer,
  UsageApi.layer,
  ChatApi.layer,
  ScheduleHandlers.layer,
  SkillHandlers.layer,
  McpHandlers.layer,
  PlaybookHandlers.layer,
  DiaryHandlers.layer
)

/** The admin API alone. */
export const api = HttpApiBuilder.layer(AdminApi, { openapiPath: OPENAPI_PATH }).pipe(
  Layer.provide(handlers),
  Layer.provide(Layer.mergeAll(AdminAuth.layer, AdminAuth.schemaErrorsLayer, ChatApi.bodyLimitLayer)),
  Layer.provide(NodeHttpServer.layerHttpServices)
)

/** What the admin API's handlers use (besides the HTTP router). */
export type AdminServices = Layer.Services<typeof api> extends infer R ? Exclude<R, HttpRouter.HttpRouter> : never

/** The admin API's routes and `GET /metrics` (give the server `notFound` too, for the web console). */
export const layer = () => Layer.merge(api, MetricsRoute.layer)

/** The web console (from `webRoot`, default the package's dist/web) as the server's `notFound`. */
export const notFound = (webRoot?: string | undefined) => WebConsole.notFound(webRoot)
