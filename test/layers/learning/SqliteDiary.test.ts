/**
 * The diary store on a real migrated SQLite file: entries round-trip exactly, every list filter
 * (tags case-insensitively through json_each), newest first with the default limit, latest by to_seq,
 * and burst uses that are settled exactly once, even by two connections racing on the same file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import type { DiaryEntry } from "../../../src/domain/learning/diary.ts"
import * as SqliteDiary from "../../../src/layers/learning/SqliteDiary.ts"
import { type BurstUse, Diary } from "../../../src/services/Diary.ts"
import { sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"

const entry = (over: Partial<DiaryEntry> & { id: string }): DiaryEntry => ({
  sessionKey: "s1",
  agentId: "default",
  userId: "alice",
  fromSeq: 1,
  toSeq: 10,
  accomplishments: ["asked: fix the build"],
  decisions: ["used npm ci"],
  challenges: ["tool bash failed: exit 1"],
  keyLearnings: ["lockfiles matter"],
  tags: ["npm", "build"],
  status: "success",
  qualityScore: 0.8,
  createdAt: 1_000,
  source: "heuristic",
  trigger: "idle",
  ...over
})

const use = (over: Partial<BurstUse>): BurstUse => ({
  sessionKey: "s1", agentId: "default", userId: "alice", kind: "rule", ref: "r1", scope: "", at: 1, ...over
})

for (const db of testDatabases(sqliteTemp)) {
  const withDiary = <A, E>(self: Effect.Effect<A, E, Diary | import("effect").Scope.Scope>) =>
    self.pipe(Effect.provide(SqliteDiary.layer.pipe(Layer.provideMerge(db.layer))))

  describe(`SqliteDiary (${db.name})`, () => {
    it.effect("stores an entry and gives it back field for field, multibyte text included", () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        const e = entry({ id: "diary_a", accomplishments: ["asked: 修复构建 — ünïcode"], qualityScore: 0.125, trigger: "demand", source: "model" })
        yield* diary.add(e)
        expect(yield* diary.get("diary_a")).toEqual(e)
      })))

    it.effect("an unknown id is DiaryEntryNotFound", () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        const err = yield* Effect.flip(diary.get("diary_missing"))
        expect(err).toMatchObject({ _tag: "DiaryEntryNotFound", id: "diary_missing" })
        expect(err.message).toBe('no diary entry "diary_missing"')
      })))

    it.effect("a duplicate id is a StorageError (ids are the caller's)", () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        yield* diary.add(entry({ id: "diary_dup" }))
        const err = yield* Effect.flip(diary.add(entry({ id: "diary_dup" })))
        expect(err._tag).toBe("StorageError")
      })))

    it.effect("lists by session, agent, user, status and tag (case-insensitive), newest first", () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        yield* diary.add(entry({ id: "e1", createdAt: 100, tags: ["Docker", "ci"] }))
        yield* diary.add(entry({ id: "e2", createdAt: 300, sessionKey: "s2", userId: "bob", status: "failure", tags: ["python"] }))
        yield* diary.add(entry({ id: "e3", createdAt: 200, agentId: "coder", status: "mixed", tags: ["docker-compose"] }))
        const ids = (f: Parameters<typeof diary.list>[0]) => Effect.map(diary.list(f), (es) => es.map((e) => e.id))
        expect(yield* ids({})).toEqual(["e2", "e3", "e1"])
        expect(yield* ids({ sessionKey: "s1" })).toEqual(["e3", "e1"])
        expect(yield* ids({ agentId: "coder" })).toEqual(["e3"])
        expect(yield* ids({ userId: "bob" })).toEqual(["e2"])
        expect(yield* ids({ status: "failure" })).toEqual(["e2"])
        expect(yield* ids({ tag: "DOCKER" })).toEqual(["e1"])
        expect(yield* ids({ tag: "docker" })).toEqual(["e1"])
        expect(yield* ids({ tag: "dock" })).toEqual([])
        expect(yield* ids({ tag: "ci", userId: "alice", status: "success" })).toEqual(["e1"])
        expect(yield* ids({ tag: "ci", status: "failure" })).toEqual([])
        expect(yield* ids({ limit: 2 })).toEqual(["e2", "e3"])
      })))

    it.effect(`lists at most ${SqliteDiary.DEFAULT_LIST_LIMIT} entries by default`, () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        for (let i = 0; i < SqliteDiary.DEFAULT_LIST_LIMIT + 5; i++) yield* diary.add(entry({ id: `e${i}`, createdAt: i }))
        const all = yield* diary.list({})
        expect(all.length).toBe(SqliteDiary.DEFAULT_LIST_LIMIT)
        expect(all[0]?.id).toBe(`e${SqliteDiary.DEFAULT_LIST_LIMIT + 4}`)
      })))

    it.effect("latest is the entry with the highest to_seq of the session", () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        expect(yield* diary.latest("s1")).toEqual(Option.none())
        yield* diary.add(entry({ id: "late", fromSeq: 11, toSeq: 20, createdAt: 50 }))
        yield* diary.add(entry({ id: "early", fromSeq: 1, toSeq: 10, createdAt: 90 }))
        yield* diary.add(entry({ id: "other", sessionKey: "s2", toSeq: 99 }))
        expect(Option.map(yield* diary.latest("s1"), (e) => e.id)).toEqual(Option.some("late"))
      })))

    it.effect("records uses in one go, lists the open ones oldest first, settles each exactly once", () =>
      withDiary(Effect.gen(function*() {
        const diary = yield* Diary
        yield* diary.recordUses([])
        const uses = [use({ ref: "r1", at: 5 }), use({ ref: "r1", at: 6 }), use({ kind: "skill", ref: "pdf", scope: "user", at: 7 })]
        yield* diary.recordUses(uses)
        yield* diary.recordUses([use({ sessionKey: "s2", ref: "r9" })])
        expect(yield* diary.openUses("s1")).toEqual(uses)
        expect(yield* diary.settleUses("s1", "diary_x")).toEqual(uses)
        expect(yield* diary.openUses("s1")).toEqual([])
        expect(yield* diary.settleUses("s1", "feedback:1")).toEqual([])
        expect((yield* diary.openUses("s2")).map((u) => u.ref)).toEqual(["r9"])
        yield* diary.recordUses([use({ ref: "r2", at: 8 })])
        expect((yield* diary.settleUses("s1", "diary_y")).map((u) => u.ref)).toEqual(["r2"])
        // `until`: a reflection settles its burst's uses, not those of a turn that started after it.
        yield* diary.recordUses([use({ ref: "r3", at: 10 }), use({ ref: "r4", at: 11 })])
        expect((yield* diary.settleUses("s1", "diary_z", 10)).map((u) => u.ref)).toEqual(["r3"])
        expect((yield* diary.openUses("s1")).map((u) => u.ref)).toEqual(["r4"])
      })))

    it.effect("two connections settling the same session at once never both get a use", () =>
      Effect.gen(function*() {
        const opened = yield* db.open
        const one = yield* Layer.build(SqliteDiary.layer.pipe(Layer.provide(opened.layer)))
        const two = yield* Layer.build(SqliteDiary.layer.pipe(Layer.provide(opened.layer)))
        const d1 = Context.get(one, Diary)
        const d2 = Context.get(two, Diary)
        const uses = Array.from({ length: 200 }, (_, i) => use({ ref: `r${i}`, at: i }))
        yield* d1.recordUses(uses)
        const rounds = yield* Effect.all(
          Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? d1 : d2).settleUses("s1", `settler${i}`)),
          { concurrency: "unbounded" }
        )
        const refs = rounds.flatMap((r) => r.map((u) => u.ref))
        expect(refs.length).toBe(200)
        expect(new Set(refs).size).toBe(200)
        expect(yield* d2.openUses("s1")).toEqual([])
      }))
  })
}
