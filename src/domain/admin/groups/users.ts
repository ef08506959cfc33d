/**
 * `/api/users`: anna users (as `anna user add|list|show|set|remove`) with their platform identities,
 * attributes (for agents' access policies), default agent, and their console account (role,
 * password; `anna admin`). A `user` may read only themselves; everything else is admin-only.
 * Removing a user does what `anna user remove` does (UserRemoval): nothing of theirs is left to a
 * later user of the same id; `?sessions=delete` deletes their sessions for good, and without it (or
 * with `keep`) they are kept under the id the user is removed as, as with `--keep-sessions`.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { AdminAuth, CommonErrors, Role, UserAllowed } from "../security.ts"

export const UserView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  defaultAgentId: Schema.NullOr(Schema.String),
  identities: Schema.Array(Schema.Struct({
    platform: Schema.String,
    externalId: Schema.String,
    lastSeenAt: Schema.optional(Schema.Number)
  })),
  attributes: Schema.Record(Schema.String, Schema.String),
  createdAt: Schema.Number,
  /** The console account's role, or null (no account: cannot log in). */
  role: Schema.NullOr(Role)
})

export const NewUser = Schema.Struct({
  id: Schema.String,
  name: Schema.optional(Schema.String),
  defaultAgentId: Schema.optional(Schema.String),
  /** With a password the user gets a console account (role default `user`). */
  password: Schema.optional(Schema.String),
  role: Schema.optional(Role)
})

export const UserChanges = Schema.Struct({
  name: Schema.optional(Schema.String),
  /** null: the first enabled agent answers them again. */
  defaultAgentId: Schema.optional(Schema.NullOr(Schema.String)),
  /** KEY → VALUE sets, KEY → null removes. */
  attributes: Schema.optional(Schema.Record(Schema.String, Schema.NullOr(Schema.String)))
})

/** What a removal did (`anna user remove --json` prints the same; see src/services/UserRemoval.ts). */
export const RemovedUser = Schema.Struct({
  userId: Schema.String,
  /** The id the user's kept data now carries: no user can be given it. */
  removedAs: Schema.String,
  sessions: Schema.Literals(["kept", "deleted"]),
  /** This request finished a removal an earlier one began. */
  resumed: Schema.Boolean,
  identities: Schema.Number,
  tokens: Schema.Number,
  chatStates: Schema.Number,
  account: Schema.Boolean,
  jobs: Schema.Array(Schema.String),
  keptSessions: Schema.Array(Schema.String),
  deletedSessions: Schema.Array(Schema.Struct({ sessionKey: Schema.String, messages: Schema.Number, summaries: Schema.Number })),
  profiles: Schema.Number,
  diaryEntries: Schema.Number,
  skillStats: Schema.Number,
  usageRecords: Schema.Number,
  ruleVotes: Schema.Number,
  rules: Schema.Number,
  workspaces: Schema.Array(Schema.String),
  accessLists: Schema.Array(Schema.String)
})

const id = { id: Schema.String }

export class UsersGroup extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.get("list", "/", { success: Schema.Array(UserView), error: CommonErrors }),
    HttpApiEndpoint.get("get", "/:id", { params: id, success: UserView, error: CommonErrors }).annotate(UserAllowed, true),
    HttpApiEndpoint.post("create", "/", { payload: NewUser, success: UserView, error: CommonErrors }),
    HttpApiEndpoint.patch("update", "/:id", { params: id, payload: UserChanges, success: UserView, error: CommonErrors }),
    /** 409 when part of it could not be done yet (the user is gone; the same request again finishes it). */
    HttpApiEndpoint.delete("remove", "/:id", {
      params: id,
      query: { sessions: Schema.optional(Schema.Literals(["keep", "delete"])) },
      success: RemovedUser,
      error: CommonErrors
    }),
    /** Makes a platform identity this user's (messages from it reach them and their memory); 409 when another user has it. */
    HttpApiEndpoint.post("linkIdentity", "/:id/identities", {
      params: id,
      payload: Schema.Struct({ platform: Schema.String, externalId: Schema.String }),
      success: UserView,
      error: CommonErrors
    }),
    /** Removes one of the user's identities (its next message makes a new user). */
    HttpApiEndpoint.delete("unlinkIdentity", "/:id/identities/:platform/:externalId", {
      params: { id: Schema.String, platform: Schema.String, externalId: Schema.String },
      success: UserView,
      error: CommonErrors
    }),
    HttpApiEndpoint.put("setRole", "/:id/role", { params: id, payload: Schema.Struct({ role: Role }), success: UserView, error: CommonErrors }),
    HttpApiEndpoint.put("setPassword", "/:id/password", {
      params: id,
      /** Creates the account (role `user`) when the user has none. */
      payload: Schema.Struct({ password: Schema.String }),
      success: HttpApiSchema.NoContent,
      error: CommonErrors
    })
  )
  .middleware(AdminAuth)
  .prefix("/users")
{}
