/**
 * `/api/users` handlers: `anna user add|list|show|set|remove` over ConfigStore, with each user's
 * console account (role, password) from Accounts (`/api/tokens`: tokenHandlers.ts). A `user` may
 * read only themselves. An admin cannot remove or demote themselves (no locking the console's last
 * door from inside).
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { BadRequest, Conflict, CurrentPrincipal, Forbidden, NotFound } from "../../domain/admin/security.ts"
import { Accounts, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, type Role } from "../../services/Accounts.ts"
import { AgentStore } from "../../services/AgentStore.ts"
import { ConfigStore, type User } from "../../services/ConfigStore.ts"
import { UserRemoval } from "../../services/UserRemoval.ts"
import { answer } from "./errors.ts"

const passwordProblem = (password: string): string | undefined =>
  password.length < MIN_PASSWORD_LENGTH
    ? `the password must have at least ${MIN_PASSWORD_LENGTH} characters`
    : password.length > MAX_PASSWORD_LENGTH
    ? `the password must have at most ${MAX_PASSWORD_LENGTH} characters`
    : undefined

export const usersLayer = HttpApiBuilder.group(AdminApi, "users", Effect.fn(function*(handlers) {
  const config = yield* ConfigStore
  const agents = yield* AgentStore
  const accounts = yield* Accounts
  const removal = yield* UserRemoval

  const view = (u: User, role: Role | null) => ({
    id: u.id,
    name: u.name,
    defaultAgentId: u.defaultAgentId,
    identities: u.identities.map((i) => ({ platform: i.platform, externalId: i.externalId, ...(i.lastSeenAt === undefined ? {} : { lastSeenAt: i.lastSeenAt }) })),
    attributes: { ...u.attributes },
    createdAt: u.createdAt,
    role
  })
  const requireUser = (id: string) =>
    Effect.flatMap(config.getUser(id), (u) => Option.isSome(u) ? Effect.succeed(u.value) : Effect.fail(NotFound.of(`no user "${id}"`)))
  const roleOf = (id: string) => Effect.map(accounts.get(id), (a) => Option.isSome(a) ? a.value.role : null)
  const shown = (id: string) => Effect.gen(function*() {
    return view(yield* requireUser(id), yield* roleOf(id))
  })
  const notSelf = (id: string, what: string) =>
    Effect.gen(function*() {
      const p = yield* CurrentPrincipal
      if (p.userId === id) return yield* Conflict.of(`you cannot ${what} yourself; ask another admin`)
    })

  return handlers
    .handle("list", () =>
      answer(Effect.gen(function*() {
        const roles = new Map((yield* accounts.list).map((a) => [a.userId, a.role]))
        return (yield* config.listUsers).map((u) => view(u, roles.get(u.id) ?? null))
      })))
    .handle("get", ({ params }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        if (p.role !== "admin" && p.userId !== params.id) return yield* Forbidden.of("you may read only your own user")
        return yield* shown(params.id)
      })))
    .handle("create", ({ payload }) =>
      answer(Effect.gen(function*() {
        if (Option.isSome(yield* config.getUser(payload.id))) return yield* Conflict.of(`a user "${payload.id}" already exists`)
        if (payload.role !== undefined && payload.password === undefined) return yield* BadRequest.of("a role needs a password (the console account)")
        const problem = payload.password === undefined ? undefined : passwordProblem(payload.password)
        if (problem !== undefined) return yield* BadRequest.of(problem)
        // Checked first, so a missing agent leaves no half-made user behind.
        if (payload.defaultAgentId !== undefined) yield* agents.get(payload.defaultAgentId)
        yield* config.createUser(payload.id, payload.name ?? payload.id)
        if (payload.defaultAgentId !== undefined) yield* config.setDefaultAgent(payload.id, payload.defaultAgentId)
        if (payload.password !== undefined) {
          yield* accounts.create({ userId: payload.id, password: payload.password, role: payload.role ?? "user" })
        }
        return yield* shown(payload.id)
      })))
    .handle("linkIdentity", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        yield* requireUser(params.id)
        const owner = (yield* config.listUsers).find((u) =>
          u.id !== params.id && u.identities.some((i) => i.platform === payload.platform && i.externalId === payload.externalId)
        )
        if (owner !== undefined) return yield* Conflict.of(`${payload.platform}:${payload.externalId} belongs to user ${owner.id}; unlink it there first`)
        yield* config.linkIdentity(params.id, payload.platform, payload.externalId)
        return yield* shown(params.id)
      })))
    .handle("unlinkIdentity", ({ params }) =>
      answer(Effect.gen(function*() {
        const user = yield* requireUser(params.id)
        if (!user.identities.some((i) => i.platform === params.platform && i.externalId === params.externalId)) {
          return yield* NotFound.of(`user ${params.id} has no identity ${params.platform}:${params.externalId}`)
        }
        yield* config.unlinkIdentity(params.id, params.platform, params.externalId)
        return yield* shown(params.id)
      })))
    .handle("update", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        yield* requireUser(params.id)
        if (payload.defaultAgentId !== undefined) yield* config.setDefaultAgent(params.id, payload.defaultAgentId)
        if (payload.name !== undefined) yield* config.renameUser(params.id, payload.name)
        if (payload.attributes !== undefined) {
          yield* config.setUserAttributes(params.id, Object.fromEntries(Object.entries(payload.attributes).map(([k, v]) => [k.trim(), v === null ? null : v.trim()])))
        }
        return yield* shown(params.id)
      })))
    .handle("remove", ({ params, query }) =>
      answer(Effect.gen(function*() {
        yield* notSelf(params.id, "remove")
        // Kept unless asked otherwise (as this endpoint always did); a removal cut short is finished
        // with the choice it began with.
        const exists = Option.isSome(yield* config.getUser(params.id))
        return yield* removal.remove(params.id, query.sessions ?? (exists ? "keep" : undefined))
      })))
    .handle("setRole", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        yield* requireUser(params.id)
        if (payload.role !== "admin") yield* notSelf(params.id, "demote")
        if (Option.isNone(yield* accounts.get(params.id))) return yield* BadRequest.of(`${params.id} has no console account; set a password first`)
        yield* accounts.setRole(params.id, payload.role)
        return yield* shown(params.id)
      })))
    .handle("setPassword", ({ params, payload }) =>
      answer(Effect.gen(function*() {
        yield* requireUser(params.id)
        const problem = passwordProblem(payload.password)
        if (problem !== undefined) return yield* BadRequest.of(problem)
        if (Option.isSome(yield* accounts.get(params.id))) yield* accounts.setPassword(params.id, payload.password)
        else yield* accounts.create({ userId: params.id, password: payload.password, role: "user" })
      })))
}))
