/**
 * The conversation's current tags (issue 15): the words of the user's message that are known rule
 * tags, plus the tags of the session's recent diary entries, normalised and without repeats.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { conversationTags, messageWords, RECENT_ENTRIES_FOR_TAGS } from "../../../src/domain/learning/tags.ts"

describe("conversation tags", () => {
  it("take the tags of this many recent diary entries", () => {
    expect(RECENT_ENTRIES_FOR_TAGS).toBe(3)
  })

  it("are the message's words that are known tags, plus the recent diary tags", () => {
    const known = new Set(["docker", "node.js", "c++", "python", "sse"])
    const tags = conversationTags(
      "Can you fix the Docker build? It breaks node.js, C++ and (sometimes) rust.",
      known,
      ["Streaming", " SSE ", ""]
    )
    assert.deepStrictEqual(tags, ["streaming", "sse", "docker", "node.js", "c++"])
  })

  it("leave out words that are no tag, and never repeat a tag", () => {
    assert.deepStrictEqual(conversationTags("hello there, hello", new Set(["docker"]), []), [])
    assert.deepStrictEqual(conversationTags("docker DOCKER Docker.", new Set(["docker"]), ["docker", "Docker"]), ["docker"])
    // Diary tags count even when no rule has them yet.
    assert.deepStrictEqual(conversationTags("", new Set(), ["elixir"]), ["elixir"])
  })

  it("split a message into lowercase words, trimming dots and dashes at their ends", () => {
    assert.deepStrictEqual([...messageWords("Use C#, Node.js and --rust-lang... (v1.2) snake_case!")], [
      "use",
      "c#",
      "node.js",
      "and",
      "rust-lang",
      "v1.2",
      "snake_case"
    ])
    assert.deepStrictEqual([...messageWords("Ärger mit Docker")], ["ärger", "mit", "docker"])
    assert.deepStrictEqual([...messageWords("  ... --- ")], [])
  })
})
