/**
 * ConfigStore on a real SQLite file and on PostgreSQL (issue 26): users across platforms, tokens (hashed on disk), channels,
 * bindings, chat states, settings and the agent snapshot with each of its failures.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import type { ProviderConfig } from "../../../src/domain/model/types.ts"
import * as Sqlite from "../../../src/layers/sql/Sqlite.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { ConfigStore, DEFAULT_CONTEXT_TOKENS } from "../../../src/services/ConfigStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { sqliteTemp, tempDbFile } from "../../support/db.ts"
import { type TestDatabase, testDatabases } from "../../support/postgres.ts"

const HOME = "/srv/anna-home"

/** Runs `body` against the stores on a fresh database: a SQLite file (whose path it gets) or a PostgreSQL database. */
const withStore = <A, E>(
  db: TestDatabase,
  body: (file: string | undefined) => Effect.Effect<A, E, ConfigStore | AgentStore | ProviderStore | SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const file = db.name === "SQLite" ? yield* tempDbFile : undefined
    return yield* body(file).pipe(
      Effect.provide(SqliteRuntimeConfig.layerWithStores(HOME).pipe(Layer.provideMerge(file === undefined ? db.layer : Sqlite.layer(file))))
    )
  })

const provider = (overrides: Partial<ProviderConfig> = {}): ProviderConfig => ({
  id: "local",
  type: "openai",
  baseUrl: "http://127.0.0.1:11434/v1",
  apiKey: "",
  models: [],
  defaultModel: "llama3",
  headers: {},
  enabled: true,
  ...overrides
})

for (const db of testDatabases(sqliteTemp)) {
  describe(`SqliteRuntimeConfig: users (${db.name})`, () => {
    it.effect("upserts one user per platform identity, idempotently, with a readable generated id", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const first = yield* config.upsertUser("telegram", "42", "Ann")
          const again = yield* config.upsertUser("telegram", "42", "Someone Else")
          const otherPlatform = yield* config.upsertUser("qq", "42")
          assert.match(first.id, /^u_[a-z2-7]{10}$/)
          assert.strictEqual(again.id, first.id)
          assert.strictEqual(again.name, "Ann", "the first name stays")
          assert.notStrictEqual(otherPlatform.id, first.id)
          assert.deepStrictEqual(first.identities.map((i) => [i.platform, i.externalId]), [["telegram", "42"]])
          assert.isNumber(first.identities[0]?.lastSeenAt)
          // A nameless user takes the platform's name once one is given.
          assert.strictEqual(otherPlatform.name, "")
          assert.strictEqual((yield* config.upsertUser("qq", "42", "Qi")).name, "Qi")
          assert.strictEqual((yield* config.listUsers).length, 2)
        })
      ))

    it.effect("creates, renames and finds users; refuses bad and duplicate ids", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const alice = yield* config.createUser("alice", " Alice ")
          assert.deepStrictEqual([alice.id, alice.name, alice.defaultAgentId, alice.identities], ["alice", "Alice", null, []])
          for (const bad of ["", "a:b", "a/b", "-x"]) {
            assert.strictEqual((yield* Effect.flip(config.createUser(bad, "x")))._tag, "InvalidConfig", bad)
          }
          const dup = yield* Effect.flip(config.createUser("alice", "Other"))
          assert.include(dup.message, "already exists")
          assert.strictEqual((yield* config.renameUser("alice", "Alice B")).name, "Alice B")
          assert.strictEqual((yield* Effect.flip(config.renameUser("ghost", "x")))._tag, "InvalidConfig")
          assert.strictEqual(Option.getOrUndefined(yield* config.getUser("alice"))?.name, "Alice B")
          assert.isTrue(Option.isNone(yield* config.getUser("ghost")))
        })
      ))

    it.effect("sets and clears a default agent, checking the user and the agent", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          yield* (yield* AgentStore).create("a1", {})
          yield* config.createUser("bob", "Bob")
          yield* config.setDefaultAgent("bob", "a1")
          assert.strictEqual(Option.getOrUndefined(yield* config.getUser("bob"))?.defaultAgentId, "a1")
          assert.strictEqual((yield* Effect.flip(config.setDefaultAgent("bob", "nope")))._tag, "AgentNotFound")
          assert.strictEqual((yield* Effect.flip(config.setDefaultAgent("ghost", "a1")))._tag, "InvalidConfig")
          yield* config.setDefaultAgent("bob", null)
          assert.strictEqual(Option.getOrUndefined(yield* config.getUser("bob"))?.defaultAgentId, null)
        })
      ))
  })

  describe(`SqliteRuntimeConfig: tokens (${db.name})`, () => {
    it.effect("issues tokens that find their user, stores only their SHA-256, refuses unknown ones", () =>
      withStore(db, (file) =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const sql = yield* SqlClient.SqlClient
          yield* config.createUser("carol", "Carol")
          yield* config.createUser("dave", "Dave")
          const t1 = yield* config.issueToken("carol", "laptop")
          const t2 = yield* config.issueToken("carol", "phone")
          const t3 = yield* config.issueToken("dave", "")
          assert.match(t1, /^anna_[A-Za-z0-9_-]{43}$/)
          assert.strictEqual(new Set([t1, t2, t3]).size, 3)
          assert.strictEqual((yield* config.userForToken(t1)).id, "carol")
          assert.strictEqual((yield* config.userForToken(t2)).id, "carol")
          assert.strictEqual((yield* config.userForToken(t3)).id, "dave")
          for (const wrong of ["", "anna_nope", t1.slice(0, -1), ` ${t1}`]) {
            const e = yield* Effect.flip(config.userForToken(wrong))
            assert.strictEqual(e._tag, "Unauthorized", JSON.stringify(wrong))
          }
          assert.strictEqual((yield* Effect.flip(config.issueToken("ghost", "x")))._tag, "InvalidConfig")

          const rows = yield* sql<{ token_hash: string; label: string }>`SELECT token_hash, label FROM user_tokens ORDER BY label`
          assert.deepStrictEqual(rows.map((r) => r.label), ["", "laptop", "phone"])
          assert.include(rows.map((r) => r.token_hash), SqliteRuntimeConfig.hashToken(t1))
          if (file !== undefined) {
            yield* sql.unsafe("PRAGMA wal_checkpoint(FULL)")
            // The database and its WAL: the hash is there (so this looks in the right place), the token is not.
            const bytes = readdirSync(dirname(file)).map((f) => readFileSync(join(dirname(file), f)).toString("latin1")).join("")
            assert.include(bytes, SqliteRuntimeConfig.hashToken(t1))
            for (const t of [t1, t2, t3]) assert.notInclude(bytes, t)
          }
        })
      ))
  })

  describe(`SqliteRuntimeConfig: channels, bindings, chat state, settings (${db.name})`, () => {
    it.effect("lists the seeded http channel; patches keep what they do not name", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          assert.deepStrictEqual(yield* config.listChannels, [{ id: "http", enabled: true, config: { host: "127.0.0.1", port: 8787 } }])
          assert.deepStrictEqual(yield* config.setChannel("telegram", { enabled: true }), { id: "telegram", enabled: true, config: {} })
          yield* config.setChannel("telegram", { config: { token: "123:abc" } })
          yield* config.setChannel("http", { enabled: false })
          yield* config.setChannel("http", { config: { host: "0.0.0.0", port: 9000 } })
          assert.deepStrictEqual(yield* config.listChannels, [
            { id: "http", enabled: false, config: { host: "0.0.0.0", port: 9000 } },
            { id: "telegram", enabled: true, config: { token: "123:abc" } }
          ])
        })
      ))

    it.effect("binds group chats to existing agents, rebinds and unbinds", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const agents = yield* AgentStore
          yield* agents.create("a1", {})
          yield* agents.create("a2", {})
          assert.isTrue(Option.isNone(yield* config.chatBinding("telegram", "-100")))
          assert.strictEqual((yield* Effect.flip(config.bindChat("telegram", "-100", "ghost")))._tag, "AgentNotFound")
          yield* config.bindChat("telegram", "-100", "a1")
          yield* config.bindChat("qq", "-100", "a2")
          assert.strictEqual(Option.getOrUndefined(yield* config.chatBinding("telegram", "-100")), "a1")
          yield* config.bindChat("telegram", "-100", "a2")
          assert.strictEqual(Option.getOrUndefined(yield* config.chatBinding("telegram", "-100")), "a2")
          yield* config.bindChat("telegram", "-100", null)
          yield* config.bindChat("telegram", "never-bound", null)
          assert.isTrue(Option.isNone(yield* config.chatBinding("telegram", "-100")))
          assert.strictEqual(Option.getOrUndefined(yield* config.chatBinding("qq", "-100")), "a2")
        })
      ))

    it.effect("chat state starts at (main, '') and changes only what a patch names, per chat", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          yield* (yield* AgentStore).create("a1", {})
          const key = ["a1", "telegram", "u1", "dm"] as const
          assert.deepStrictEqual(yield* config.chatState(...key), { context: "main", model: "" })
          assert.deepStrictEqual(yield* config.chatState(...key), { context: "main", model: "" })
          assert.deepStrictEqual(yield* config.setChatState(...key, { context: "c2" }), { context: "c2", model: "" })
          assert.deepStrictEqual(yield* config.setChatState(...key, { model: "local/qwen" }), { context: "c2", model: "local/qwen" })
          assert.deepStrictEqual(yield* config.chatState(...key), { context: "c2", model: "local/qwen" })
          assert.deepStrictEqual(yield* config.chatState("a1", "telegram", "u1", "group-1"), { context: "main", model: "" })
          assert.deepStrictEqual(yield* config.setChatState("a1", "qq", "u1", "dm", { model: "m" }), { context: "main", model: "m" })
        })
      ))

    it.effect("stores settings by key", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          assert.isTrue(Option.isNone(yield* config.getSetting("k")))
          yield* config.setSetting("k", "v1")
          yield* config.setSetting("k", "v2")
          yield* config.setSetting("other", "")
          assert.strictEqual(Option.getOrUndefined(yield* config.getSetting("k")), "v2")
          assert.strictEqual(Option.getOrUndefined(yield* config.getSetting("other")), "")
        })
      ))

    it.effect("stores a setting once: the first value stays, whoever asks after", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const values = yield* Effect.all([config.settingOnce("once", () => "a"), config.settingOnce("once", () => "b")], { concurrency: "unbounded" })
          assert.strictEqual(values[0], values[1])
          assert.strictEqual(yield* config.settingOnce("once", () => "c"), values[0])
          assert.strictEqual(Option.getOrUndefined(yield* config.getSetting("once")), values[0])
        })
      ))
  })

  describe(`SqliteRuntimeConfig: snapshot (${db.name})`, () => {
    it.effect("gives the agent's model, budget, tools, turns and sandbox; defaults where unset", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const agents = yield* AgentStore
          yield* (yield* ProviderStore).add(provider())
          yield* agents.create("plain", { providerId: "local" })
          const plain = yield* config.snapshot("plain")
          assert.deepStrictEqual(
            [plain.provider.id, plain.model, plain.contextTokens, plain.tools, plain.maxTurns],
            ["local", "llama3", DEFAULT_CONTEXT_TOKENS, null, 25]
          )
          assert.strictEqual(plain.folder, join(HOME, "workspaces", "plain"))
          assert.deepStrictEqual(plain.sandbox, {
            agentId: "plain",
            userId: "",
            workspace: join(HOME, "workspaces", "plain", "shared"),
            image: "anna-sandbox:latest",
            network: "disabled",
            limits: { memoryMb: 1024, cpus: 1, pids: 256, tmpMb: 256, diskMb: 1024 }
          })
          yield* agents.create("tuned", {
            providerId: "local",
            model: "qwen2",
            contextTokens: 32_000,
            tools: ["bash", "memory"],
            maxTurns: 3,
            sandboxNetwork: "allow_all"
          })
          const tuned = yield* config.snapshot("tuned")
          assert.deepStrictEqual(
            [tuned.model, tuned.contextTokens, tuned.tools, tuned.maxTurns, tuned.sandbox.network, tuned.sandbox.workspace],
            ["qwen2", 32_000, ["bash", "memory"], 3, "allow_all", join(HOME, "workspaces", "tuned", "shared")]
          )
          assert.strictEqual(tuned.agent.id, "tuned")
        })
      ))

    it.effect("fails with AgentNotFound, or NoModel without a provider, with a disabled or a missing one", () =>
      withStore(db, () =>
        Effect.gen(function*() {
          const config = yield* ConfigStore
          const agents = yield* AgentStore
          const providers = yield* ProviderStore
          const sql = yield* SqlClient.SqlClient
          assert.strictEqual((yield* Effect.flip(config.snapshot("ghost")))._tag, "AgentNotFound")
          yield* agents.create("bare", {})
          const bare = yield* Effect.flip(config.snapshot("bare"))
          assert.strictEqual(bare._tag, "NoModel")
          assert.include(bare.message, "no provider")
          yield* providers.add(provider({ id: "off", enabled: false }))
          yield* agents.create("offline", { providerId: "off" })
          const offline = yield* Effect.flip(config.snapshot("offline"))
          assert.strictEqual(offline._tag, "NoModel")
          assert.include(offline.message, "disabled")
          // A provider row gone from under an agent (only possible with foreign keys off).
          yield* providers.add(provider({ id: "gone" }))
          yield* agents.create("orphan", { providerId: "gone" })
          if (db.name === "SQLite") {
            yield* sql.unsafe("PRAGMA foreign_keys = OFF")
            yield* sql`DELETE FROM providers WHERE id = 'gone'`
            yield* sql.unsafe("PRAGMA foreign_keys = ON")
          } else {
            // PostgreSQL: foreign keys are triggers, off for this transaction's session (superuser in tests).
            yield* sql.withTransaction(Effect.andThen(
              sql.unsafe("SET LOCAL session_replication_role = replica"),
              sql`DELETE FROM providers WHERE id = 'gone'`
            ))
          }
          const orphan = yield* Effect.flip(config.snapshot("orphan"))
          assert.strictEqual(orphan._tag, "NoModel")
          assert.include(orphan.message, "missing")
        })
      ))
  })
}
