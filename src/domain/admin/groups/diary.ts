/**
 * `/api/diary`: the diary entries reflection wrote after each burst of work, as `anna diary list|show`
 * print them — a filtered list (session, agent, user, tag, status), newest first, in pages, and one
 * entry with every field.
 *
 * An admin reads every entry. A `user` reads only their own (the entries of their own conversations,
 * as they read only their own sessions): another user's entry is a 404, as one that does not exist,
 * and naming another user in the list's filter a 403.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminAuth, CommonErrors, UserAllowed } from "../security.ts"

/** Most entries one page holds. */
export const MAX_DIARY_PAGE = 200

const PageSize = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_DIARY_PAGE }))
const NonNegative = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Status = Schema.Literals(["success", "failure", "mixed"])

export const DiaryEntryView = Schema.Struct({
  id: Schema.String,
  sessionKey: Schema.String,
  agentId: Schema.String,
  userId: Schema.String,
  /** The burst: the session's stored messages fromSeq..toSeq. */
  fromSeq: Schema.Number,
  toSeq: Schema.Number,
  accomplishments: Schema.Array(Schema.String),
  decisions: Schema.Array(Schema.String),
  challenges: Schema.Array(Schema.String),
  keyLearnings: Schema.Array(Schema.String),
  tags: Schema.Array(Schema.String),
  status: Status,
  qualityScore: Schema.Number,
  createdAt: Schema.Number,
  /** Who wrote it: the summary model, or the heuristic when no model answered. */
  source: Schema.Literals(["model", "heuristic"]),
  /** What ended the burst. */
  trigger: Schema.Literals(["idle", "new", "demand", "startup"])
})
export type DiaryEntryView = typeof DiaryEntryView.Type

export const DiaryPage = Schema.Struct({
  entries: Schema.Array(DiaryEntryView),
  /** Pass as `offset` for the next page; null when this is the last. */
  nextOffset: Schema.NullOr(Schema.Number)
})

export class DiaryGroup extends HttpApiGroup.make("diary")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: {
        session: Schema.optional(Schema.String),
        agent: Schema.optional(Schema.String),
        /** Admins only (a `user` always gets their own entries). */
        user: Schema.optional(Schema.String),
        /** Entries with this tag (case-insensitive). */
        tag: Schema.optional(Schema.String),
        status: Schema.optional(Status),
        /** Default 50. */
        limit: Schema.optional(PageSize),
        offset: Schema.optional(NonNegative)
      },
      success: DiaryPage,
      error: CommonErrors
    }),
    HttpApiEndpoint.get("show", "/:id", { params: { id: Schema.String }, success: DiaryEntryView, error: CommonErrors })
  )
  .annotate(UserAllowed, true)
  .middleware(AdminAuth)
  .prefix("/diary")
{}
