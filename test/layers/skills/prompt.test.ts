/**
 * Installed skills reach the model: the system prompt the fake LLM server received lists them
 * (`- name: description`) and the `skills` tool's `use` returns the body — the whole runtime, over
 * the OpenAI SDK against the fake server, on real SQLite.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { ChatTarget } from "../../../src/domain/runtime/types.ts"
import * as SqliteRuntimeConfig from "../../../src/layers/config/SqliteConfigStore.ts"
import * as DeterministicSummarizer from "../../../src/layers/memory/DeterministicSummarizer.ts"
import * as LcmMemory from "../../../src/layers/memory/LcmMemory.ts"
import * as ProviderClients from "../../../src/layers/providers/SdkProviderRegistry.ts"
import * as Compose from "../../../src/programs/compose.ts"
import { AgentStore } from "../../../src/services/AgentStore.ts"
import { AppConfig } from "../../../src/services/AppConfig.ts"
import { ProviderStore } from "../../../src/services/ProviderStore.ts"
import { Runtime } from "../../../src/services/Runtime.ts"
import { Skills } from "../../../src/services/Skills.ts"
import { sqliteTemp, tempDir } from "../../support/db.ts"
import { fakeLlmSuite } from "../../support/fakeLlm/suite.ts"
import { localProvider } from "../../support/runtimeStack.ts"
import { fastTransport } from "../providers/contract.ts"
import { skillMd } from "./tarballs.ts"

const suite = fakeLlmSuite()

const stack = (home: string) =>
  Compose.agentRuntime({ runnerIdle: "1 second" }).pipe(
    Layer.provide(ProviderClients.layer(fastTransport)),
    Layer.provideMerge(LcmMemory.layerSqlite.pipe(Layer.provide(DeterministicSummarizer.layer))),
    Layer.provideMerge(SqliteRuntimeConfig.layerWithStores(home)),
    Layer.provideMerge(sqliteTemp),
    Layer.provide(AppConfig.at(home))
  )

const say = (target: ChatTarget, text: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve(target)
    return yield* Stream.runCollect(runtime.send(chat, text))
  })

const systemOf = (i: number): string => {
  const body = suite.fake.requests[i]?.body as { messages?: ReadonlyArray<{ role: string; content: unknown }> } | undefined
  return JSON.stringify(body?.messages?.find((m) => m.role === "system")?.content ?? "")
}

const home = suite.keep(tempDir("anna-skills-prompt-"))
const install = (folder: string, name: string, description: string) => {
  mkdirSync(join(folder, name), { recursive: true })
  writeFileSync(join(folder, name, "SKILL.md"), skillMd(name, description, `Secret steps of ${name}.`))
}

describe("skills in the system prompt", () => {
  it.effect("lists the agent's skills (its own shadowing a global one); `use` loads the body", () =>
    Effect.gen(function*() {
      install(join(home, "skills"), "deploy", "Deploy the global way")
      install(join(home, "skills"), "notes", "Take meeting notes")
      install(join(home, "workspaces", "a1", "skills"), "deploy", "Deploy the a1 way")
      yield* (yield* ProviderStore).add(localProvider(suite.fake))
      yield* (yield* AgentStore).create("a1", { providerId: "local", tools: ["skills"] })

      suite.fake.script(
        { kind: "reply", parts: [{ type: "tool_call", id: "c1", name: "skills", input: { action: "use", name: "deploy" } }] },
        { kind: "reply", parts: [{ type: "text", text: "Deploying." }] }
      )
      yield* say({ platform: "cli", externalUserId: "ann", userName: "Ann" }, "deploy please")
      const system = systemOf(0)
      assert.include(system, "# Skills")
      assert.include(system, "- deploy: Deploy the a1 way")
      assert.include(system, "- notes: Take meeting notes")
      assert.notInclude(system, "Deploy the global way")
      assert.notInclude(system, "Secret steps", "the body is loaded only when used")
      const toolResult = JSON.stringify(suite.fake.requests[1]?.body ?? null)
      assert.include(toolResult, "Secret steps of deploy.")

      // A new skill is in the next turn's prompt (the cache saw the folder change).
      install(join(home, "skills"), "pdf", "Read PDFs")
      const skills = yield* Skills
      const deadline = Date.now() + 5_000
      while (!(yield* skills.forPrompt("a1")).some((s) => s.name === "pdf")) {
        if (Date.now() > deadline) return assert.fail("the new skill was not seen")
        yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
      }
      suite.fake.script({ kind: "reply", parts: [{ type: "text", text: "ok" }] })
      yield* say({ platform: "cli", externalUserId: "ann", userName: "Ann" }, "and now?")
      assert.include(systemOf(2), "- pdf: Read PDFs")
    }).pipe(Effect.provide(stack(home))))
})
