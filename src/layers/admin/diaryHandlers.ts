/**
 * `/api/diary` handlers: `anna diary list|show` for the principal. An admin reads every entry; a
 * `user` only their own — the list is kept to them whatever the filters say (naming another user is
 * a 403), and another user's entry is "not found", as one that does not exist, so ids cannot be
 * probed. Pages are read one entry further than asked, to know whether another follows.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApi } from "../../domain/admin/api.ts"
import { CurrentPrincipal, Forbidden } from "../../domain/admin/security.ts"
import { DiaryEntryNotFound } from "../../domain/learning/errors.ts"
import { Diary } from "../../services/Diary.ts"
import { answer } from "./errors.ts"

/** Entries a page holds when the request says nothing. */
export const DEFAULT_DIARY_PAGE = 50

export const layer = HttpApiBuilder.group(AdminApi, "diary", Effect.fn(function*(handlers) {
  const diary = yield* Diary

  return handlers
    .handle("list", ({ query }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        if (p.role !== "admin" && query.user !== undefined && query.user !== p.userId) return yield* Forbidden.of("you may read only your own diary")
        const limit = query.limit ?? DEFAULT_DIARY_PAGE
        const offset = query.offset ?? 0
        const entries = yield* diary.list({
          sessionKey: query.session,
          agentId: query.agent,
          userId: p.role === "admin" ? query.user : p.userId,
          tag: query.tag,
          status: query.status,
          limit: limit + 1,
          offset
        })
        return { entries: entries.slice(0, limit), nextOffset: entries.length > limit ? offset + limit : null }
      })))
    .handle("show", ({ params }) =>
      answer(Effect.gen(function*() {
        const p = yield* CurrentPrincipal
        const entry = yield* diary.get(params.id)
        if (p.role !== "admin" && entry.userId !== p.userId) return yield* new DiaryEntryNotFound({ id: params.id })
        return entry
      })))
}))
