/**
 * The admin API (issue 13): one `HttpApi` declaration under `/api`, shared by the gateway (which
 * serves it on the HTTP channel's server), the tests (typed clients) and the web console. Schemas
 * only: nothing here or in what it imports touches node: modules.
 *
 * Security (src/domain/admin/security.ts): the session cookie or a bearer token, CSRF for cookie
 * requests that change something, admin-only unless an endpoint says `UserAllowed`; errors are
 * `{error: {code, message}}`. The OpenAPI document is served at `/api/openapi.json`.
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { AgentsGroup } from "./groups/agents.ts"
import { AuthGroup } from "./groups/auth.ts"
import { BindingsGroup } from "./groups/bindings.ts"
import { ChannelsGroup } from "./groups/channels.ts"
import { PluginsGroup } from "./groups/plugins.ts"
import { ProvidersGroup } from "./groups/providers.ts"
import { SettingsGroup } from "./groups/settings.ts"
import { TokensGroup } from "./groups/tokens.ts"
import { UsersGroup } from "./groups/users.ts"
import { SchemaErrors } from "./security.ts"
import { ChatGroup } from "./groups/chat.ts"
import { SessionsGroup } from "./groups/sessions.ts"
import { UsageGroup } from "./groups/usage.ts"
import { ScheduleGroup } from "./groups/schedule.ts"
import { SkillsGroup } from "./groups/skills.ts"
import { McpGroup } from "./groups/mcp.ts"
import { PlaybookGroup } from "./groups/playbook.ts"
import { DiaryGroup } from "./groups/diary.ts"

/** Where the API is served. */
export const API_PREFIX = "/api"
/** The OpenAPI document's path. */
export const OPENAPI_PATH = "/api/openapi.json"

export class AdminApi extends HttpApi.make("anna-admin")
  .add(AuthGroup)
  .add(ProvidersGroup)
  .add(AgentsGroup)
  .add(ChannelsGroup)
  .add(UsersGroup)
  .add(TokensGroup)
  .add(BindingsGroup)
  .add(PluginsGroup)
  .add(SettingsGroup)
  .add(SessionsGroup)
  .add(UsageGroup)
  .add(ChatGroup)
  .add(ScheduleGroup)
  .add(SkillsGroup)
  .add(McpGroup)
  .add(PlaybookGroup)
  .add(DiaryGroup)
  // Last: it applies to every endpoint added before it.
  .middleware(SchemaErrors)
  .prefix(API_PREFIX)
  .annotateMerge(OpenApi.annotations({
    title: "anna admin API",
    // The API's own version (not the package's): moves when an endpoint changes incompatibly.
    version: "1.0.0",
    description:
      "Configure and operate an anna gateway: providers, agents, channels, users and identities, tokens, bindings, plugins, settings; sessions, usage and the web chat."
  }))
{}
