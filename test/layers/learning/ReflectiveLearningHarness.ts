/**
 * The learning loop's test stack: a real SQLite file and a temporary $ANNA_HOME (the playbook's
 * YAML files), the real Diary, Playbook, SkillStats, plugin, memory and provider layers, and a
 * provider row pointing at the fake LLM server. Shared by the ReflectiveLearning and playbook tool tests.
 */
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import type { NewMessage } from "../../../src/domain/message.ts"
import type { TransportOptions } from "../../../src/domain/model/types.ts"
import { sessionRefFromKey } from "../../../src/domain/memory/session.ts"
import * as SqlitePluginStore from "../../../src/layers/config/SqlitePluginStore.ts"
import * as ReflectiveLearning from "../../../src/layers/learning/ReflectiveLearning.ts"
import * as SqliteDiary from "../../../src/layers/learning/SqliteDiary.ts"
import * as SqliteSkillStats from "../../../src/layers/learning/SqliteSkillStats.ts"
import * as YamlPlaybook from "../../../src/layers/learning/YamlPlaybook.ts"
import * as SessionLocks from "../../../src/layers/memory/SessionLocks.ts"
import * as SqliteMemoryStore from "../../../src/layers/memory/SqliteMemoryStore.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { MemoryStore } from "../../../src/services/MemoryStore.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { modelStores, sqliteTemp, tempDir } from "../../support/db.ts"
import type { FakeLlm } from "../../support/fakeLlm/server.ts"

export const AGENT = "a1"
export const USER = "u1"
export const KEY = `${AGENT}:cli:${USER}:main`

/**
 * No retries: a scripted error is the provider's answer at once (retry backoff would wait on the
 * TestClock), and a hung request fails once the TestClock passes `timeoutMs`.
 */
export const noRetries: TransportOptions = { timeoutMs: 5_000, maxRetries: 0, baseBackoffMs: 5, maxBackoffMs: 10 }

const tempHome = Layer.unwrap(
  Effect.acquireRelease(Effect.sync(() => tempDir("anna-learning-")), (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))).pipe(
    Effect.map((home) => AppConfig.at(home))
  )
)

/** Everything the Learning layer needs, on a fresh database and home. */
export const infra = (transport: TransportOptions = noRetries) =>
  ProviderClients.layer(transport).pipe(
    Layer.provideMerge(Layer.mergeAll(
      modelStores,
      SqliteMemoryStore.layer,
      SqlitePluginStore.layer,
      SqliteDiary.layer,
      SqliteSkillStats.layer,
      SessionLocks.layer,
      YamlPlaybook.layer
    )),
    Layer.provideMerge(Layer.merge(sqliteTemp, tempHome))
  )

export const stack = (transport: TransportOptions = noRetries) => ReflectiveLearning.layer.pipe(Layer.provideMerge(infra(transport)))

/** The provider `local` on the fake server and the agent a1 using it; `provider: false` leaves both out but the agent. */
export const setup = (fake: FakeLlm, options: { readonly provider?: boolean } = {}) =>
  Effect.gen(function*() {
    if (options.provider !== false) {
      yield* (yield* ProviderStore).add({
        id: "local",
        type: "openai",
        baseUrl: fake.openAiUrl,
        apiKey: "sk-local-abcdef",
        models: [],
        defaultModel: "fake-large",
        headers: {},
        enabled: true
      })
      yield* (yield* AgentStore).create(AGENT, { providerId: "local", summaryProviderId: "local", summaryModel: "fake-small" })
    }
  })

/** Appends messages to a session (created on first use); returns their seqs. */
export const append = (messages: ReadonlyArray<NewMessage>, key: string = KEY) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const conversation = yield* store.ensureConversation(sessionRefFromKey(key))
    return yield* store.appendMessages(conversation.id, messages)
  })

/** A question about Docker and its answer. */
export const exchange = (question = "How do I pin the docker base image?", reply = "Use a tag or digest in FROM."): ReadonlyArray<NewMessage> => [
  { role: "user", content: question },
  { role: "assistant", content: reply }
]

/** A reflection answer as JSON text. */
export const reflectionJson = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    accomplishments: ["Explained how to pin the base image"],
    decisions: ["Recommended a digest over a tag"],
    challenges: [],
    key_learnings: ["Digests are immutable"],
    tags: ["docker"],
    status: "success",
    quality_score: 0.9,
    rules: [{ text: "Pin Docker base images by digest", tags: ["docker"] }],
    ...over
  })
