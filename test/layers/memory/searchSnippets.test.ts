/**
 * Search snippets over real SQLite FTS5: the words after a match stay in the snippet, also when
 * the match sits late in a sentence (FTS5's snippet() ended such a snippet right after the match).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import { MemoryProvider } from "../../../src/services/MemoryProvider.ts"
import { Searcher } from "../../../src/services/Searcher.ts"
import { lcmOn, sqliteTemp } from "../../support/db.ts"
import { testDatabases } from "../../support/postgres.ts"
import { T0 } from "../../support/memory.ts"

const KEY = "a1:cli:u1:main"
const scope = { _tag: "Session", sessionKey: KEY } as const

const put = (texts: ReadonlyArray<string>) =>
  Effect.flatMap(MemoryProvider, (memory) =>
    memory.append(
      sessionRefFromKey(KEY),
      texts.map((content, i) => ({ role: "user" as const, content, createdAt: T0 + i * 1000 }))
    ))

for (const db of testDatabases(sqliteTemp)) {
const lcmTemp = lcmOn(db.layer)

describe(`search snippets (${db.name})`, () => {
  it.effect("show what follows the match", () =>
    Effect.gen(function*() {
      yield* put([
        // FACT is the 16th word of the text, or of a sentence: where snippet() cut.
        "Notes from our call with the platform team about the whole migration plan, staging database FACT-3003 is on port 6543.",
        `${"We checked the list. ".repeat(8)}Then we went through every service in the rack one by one and noted cache FACT-4004 listens on port 7001 ${"after which we went on with the rest of the list ".repeat(8)}`
      ])
      const hits = yield* (yield* Searcher).search("FACT", { scope })
      assert.strictEqual(hits.length, 2)
      const snippet = (n: string) => hits.find((h) => h.snippet.includes(n))?.snippet ?? ""
      assert.strictEqual(snippet("3003"), "Notes from our call with the platform team about the whole migration plan, staging database «FACT»-3003 is on port 6543.")
      const long = snippet("4004")
      assert.include(long, "«FACT»-4004 listens on port 7001 after which")
      assert.match(long, /^….*…$/)
      assert.isBelow(long.length, 240)
    }).pipe(Effect.provide(lcmTemp)))
})
}
