/**
 * `/api/diary` through a real server on the real diary table: the operator's list (filters by
 * session, agent, user, tag and status, newest first, in pages that say where the next starts) and
 * any entry; a `user` reads only their own entries — the list is theirs whatever the filters, naming
 * another user is a 403, another's entry a 404 as one that does not exist. Entry texts come back as
 * they were written (the console renders them as text).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { DiaryEntry } from "../../../src/domain/learning/diary.ts"
import { Forbidden, NotFound } from "../../../src/domain/admin/security.ts"
import { Diary } from "../../../src/services/Diary.ts"
import { HttpAddress } from "../../../src/services/HttpAddress.ts"
import { account, clientFor, withAdmin } from "./sessionsSetup.ts"

const T0 = 1_767_225_600_000

const entry = (n: number, over: Partial<DiaryEntry>): DiaryEntry => ({
  id: `diary_t${String(n).padStart(2, "0")}`,
  sessionKey: "d1:web:alice:default",
  agentId: "d1",
  userId: "alice",
  fromSeq: n * 10,
  toSeq: n * 10 + 9,
  accomplishments: [`asked: task ${n}`],
  decisions: [],
  challenges: [],
  keyLearnings: [],
  tags: ["general"],
  status: "success",
  qualityScore: 0.7,
  createdAt: T0 + n * 60_000,
  source: "model",
  trigger: "idle",
  ...over
})

/** Seven entries of alice's (two sessions, two agents), three of bob's; accounts root, alice, bob. */
const seeded = Effect.gen(function*() {
  const diary = yield* Diary
  const entries = [
    entry(1, {}),
    entry(2, { tags: ["deploy", "CI"], status: "failure", challenges: ["<script>alert('x')</script> broke the build"] }),
    entry(3, { sessionKey: "d1:web:alice:work" }),
    entry(4, { agentId: "d2", sessionKey: "d2:web:alice:default", status: "mixed" }),
    entry(5, { tags: ["deploy"] }),
    entry(6, {}),
    entry(7, { status: "failure" }),
    entry(8, { userId: "bob", sessionKey: "d1:telegram:bob:dm", keyLearnings: ["bob's secret plan"] }),
    entry(9, { userId: "bob", sessionKey: "d1:telegram:bob:dm", tags: ["deploy"] }),
    entry(10, { userId: "bob", sessionKey: "d1:telegram:bob:dm" })
  ]
  for (const e of entries) yield* diary.add(e)
  return { root: yield* account("root", "admin"), alice: yield* account("alice", "user"), bob: yield* account("bob", "user") }
})

const ids = (page: { readonly entries: ReadonlyArray<{ readonly id: string }> }) => page.entries.map((e) => Number(e.id.slice("diary_t".length)))

describe("admin API: diary", () => {
  it.live("the operator lists every entry newest first, filtered and in pages, and shows any", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        const root = yield* clientFor(tokens.root)
        const all = yield* root.diary.list({ query: {} })
        assert.deepStrictEqual(ids(all), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
        assert.isNull(all.nextOffset)
        assert.deepStrictEqual(ids(yield* root.diary.list({ query: { user: "bob" } })), [10, 9, 8])
        assert.deepStrictEqual(ids(yield* root.diary.list({ query: { agent: "d2" } })), [4])
        assert.deepStrictEqual(ids(yield* root.diary.list({ query: { session: "d1:web:alice:work" } })), [3])
        assert.deepStrictEqual(ids(yield* root.diary.list({ query: { tag: "ci" } })), [2])
        assert.deepStrictEqual(ids(yield* root.diary.list({ query: { tag: "deploy", user: "alice" } })), [5, 2])
        assert.deepStrictEqual(ids(yield* root.diary.list({ query: { status: "failure" } })), [7, 2])
        // Pages: each says where the next starts, the last says none.
        const first = yield* root.diary.list({ query: { limit: 4 } })
        assert.deepStrictEqual([ids(first), first.nextOffset], [[10, 9, 8, 7], 4])
        const second = yield* root.diary.list({ query: { limit: 4, offset: 4 } })
        assert.deepStrictEqual([ids(second), second.nextOffset], [[6, 5, 4, 3], 8])
        const last = yield* root.diary.list({ query: { limit: 4, offset: 8 } })
        assert.deepStrictEqual([ids(last), last.nextOffset], [[2, 1], null])
        const shown = yield* root.diary.show({ params: { id: "diary_t08" } })
        assert.deepStrictEqual(shown.keyLearnings, ["bob's secret plan"])
        assert.instanceOf(yield* Effect.flip(root.diary.show({ params: { id: "diary_nope" } })), NotFound)
        // A page size out of range is refused, with the usual error body.
        const { url } = yield* HttpAddress
        const bad = yield* Effect.promise(() => fetch(`${url}/api/diary?limit=0`, { headers: { authorization: `Bearer ${tokens.root}` } }))
        assert.strictEqual(bad.status, 400)
      })))

  it.live("a user reads only their own entries: another's is a 404, naming another user a 403", () =>
    withAdmin(() =>
      Effect.gen(function*() {
        const tokens = yield* seeded
        const alice = yield* clientFor(tokens.alice)
        assert.deepStrictEqual(ids(yield* alice.diary.list({ query: {} })), [7, 6, 5, 4, 3, 2, 1])
        assert.deepStrictEqual(ids(yield* alice.diary.list({ query: { user: "alice", tag: "deploy" } })), [5, 2])
        // Filters cannot reach beyond her own: bob's session gives nothing.
        assert.deepStrictEqual(ids(yield* alice.diary.list({ query: { session: "d1:telegram:bob:dm" } })), [])
        assert.instanceOf(yield* Effect.flip(alice.diary.list({ query: { user: "bob" } })), Forbidden)
        const hers = yield* alice.diary.show({ params: { id: "diary_t02" } })
        assert.deepStrictEqual(hers.challenges, ["<script>alert('x')</script> broke the build"])
        assert.deepStrictEqual([hers.tags, hers.status, hers.source, hers.trigger], [["deploy", "CI"], "failure", "model", "idle"])
        const bobs = yield* Effect.flip(alice.diary.show({ params: { id: "diary_t08" } }))
        const none = yield* Effect.flip(alice.diary.show({ params: { id: "diary_nope" } }))
        assert.instanceOf(bobs, NotFound)
        assert.strictEqual(bobs.message.replace("diary_t08", "ID"), none.message.replace("diary_nope", "ID"), "the same answer as for no entry")
        const bob = yield* clientFor(tokens.bob)
        assert.deepStrictEqual(ids(yield* bob.diary.list({ query: {} })), [10, 9, 8])
      })))
})
