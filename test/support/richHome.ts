/**
 * A SQLite database with something in nearly every table (issue 26's `anna db copy` tests): sessions
 * written and compacted through memory (summaries of both kinds, DAG links, live items, search
 * counts and text, a profile), providers, agents and usage through their stores, and the rest —
 * users and their identities, an account with a browser session, jobs and runs, diary, burst uses,
 * vectors, a changed plugin, settings — as rows.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"
import { emptyUsage } from "../../src/domain/model/types.ts"
import * as Sqlite from "../../src/layers/sql/Sqlite.ts"
import { Compactor } from "../../src/services/Compactor.ts"
import { MemoryProvider } from "../../src/services/MemoryProvider.ts"
import { ProfileStore } from "../../src/services/ProfileStore.ts"
import { ProviderStore } from "../../src/services/ProviderStore.ts"
import { UsageLog } from "../../src/services/UsageLog.ts"
import { lcmOn, modelStores } from "./db.ts"
import { chat, T0 } from "./memory.ts"

export const SESSIONS = ["a1:cli:u1:main", "a1:telegram:42:dm", "a1:cli:u2:work"]

export const fillHome = (file: string, messagesPerSession = 120) =>
  Effect.gen(function*() {
    const memory = yield* MemoryProvider
    const compactor = yield* Compactor
    for (const [i, key] of SESSIONS.entries()) {
      yield* memory.append(sessionRefFromKey(key), chat(messagesPerSession, i * 1000, i === 1 ? " 我们讨论了天气" : ""))
      yield* compactor.compact(key, { budget: 1_500, full: true })
    }
    yield* (yield* ProfileStore).setProfile("u1", "a1", "likes tea")
    yield* (yield* ProviderStore).add({
      id: "openai", type: "openai", baseUrl: "http://127.0.0.1:11434/v1", apiKey: "sk-1", models: ["m1"],
      defaultModel: "m1", headers: {}, enabled: true
    })
    yield* (yield* ProviderStore).add({
      id: "claude", type: "anthropic", baseUrl: "", apiKey: "sk-2", models: [], defaultModel: "c1", headers: {}, enabled: true
    })
    const usage = yield* UsageLog
    for (let i = 0; i < 5; i++) {
      yield* usage.record({
        providerId: "openai", model: "m1", purpose: "chat", sessionKey: SESSIONS[0] ?? "", agentId: "a1", userId: "u1",
        usage: { ...emptyUsage, inputTokens: 100 + i, outputTokens: 10 }
      })
    }
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO agents (id, name, provider_id, model, created_at, updated_at, sandbox_cpus) VALUES ('a1', 'Agent one', 'openai', 'm1', ${T0}, ${T0 + 1}, 1.5)`
    yield* sql`INSERT INTO users (id, name, default_agent_id, created_at, updated_at) VALUES ('u1', 'Ada', 'a1', ${T0}, ${T0}), ('u2', 'Bo', NULL, ${T0 + 5}, ${T0 + 5})`
    yield* sql`INSERT INTO user_identities (platform, external_id, user_id, last_seen_at) VALUES ('telegram', '42', 'u1', ${T0 + 9})`
    yield* sql`INSERT INTO accounts (user_id, role, password_hash, created_at, password_changed_at, login) VALUES ('u1', 'admin', 'scrypt$x', ${T0}, ${T0}, 'ada')`
    for (const s of ["s2", "s1"]) {
      yield* sql`INSERT INTO web_sessions (id, token_hash, user_id, csrf_token, created_at, last_seen_at, expires_at) VALUES (${s}, ${`h-${s}`}, 'u1', 'c', ${T0}, ${T0}, ${T0 + 1e9})`
    }
    yield* sql`INSERT INTO scheduler_jobs (id, agent_id, user_id, kind, spec, prompt, session_mode, created_by, created_at, next_run_at) VALUES ('j1', 'a1', 'u1', 'every', '1h', 'ping', 'reuse', 'operator', ${T0}, ${T0 + 3600000})`
    for (let i = 0; i < 3; i++) yield* sql`INSERT INTO scheduler_runs (job_id, trigger, started_at, ended_at, status, reply) VALUES ('j1', 'schedule', ${T0 + i}, ${T0 + i + 1}, 'ok', 'pong')`
    // AUTOINCREMENT's high-water mark stays past a deleted last run.
    yield* sql`DELETE FROM scheduler_runs WHERE id = 3`
    yield* sql`INSERT INTO diary_entries (id, session_key, agent_id, user_id, from_seq, to_seq, accomplishments, decisions, challenges, key_learnings, tags, status, quality_score, source, trigger, created_at)
      VALUES ('d1', ${SESSIONS[0] ?? ""}, 'a1', 'u1', 1, 20, '["a"]', '[]', '[]', '[]', '["t"]', 'success', 0.75, 'heuristic', 'idle', ${T0})`
    yield* sql`INSERT INTO burst_uses (session_key, agent_id, user_id, kind, ref, at) VALUES (${SESSIONS[0] ?? ""}, 'a1', 'u1', 'rule', 'r1', ${T0})`
    const vector = new Uint8Array(new Float32Array([0.25, -1, 3.5]).buffer)
    yield* sql`INSERT INTO ctx_vectors (source, row_id, model, conversation_id, dims, vector, created_at) VALUES ('message', 1, 'e1', 1, 3, ${vector}, ${T0})`
    yield* sql`UPDATE plugins SET enabled = 0, updated_at = ${T0} WHERE id = 'webfetch'`
    yield* sql`INSERT INTO settings (key, value) VALUES ('timezone', '"Europe/Paris"')`
  }).pipe(Effect.provide(Layer.unwrap(Effect.sync(() => {
    const db = Sqlite.layer(file)
    return Layer.merge(lcmOn(db), modelStores.pipe(Layer.provide(db)))
  }))))
