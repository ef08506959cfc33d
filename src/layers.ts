/**
 * `anna/layers`: the implementations a custom deployment composes, one namespace per layer module
 * (each exports `layer`, some `make` and variants). The CLI's own composition is
 * src/programs/layers.ts; examples/simple-http shows a smaller one.
 */
export * as Compose from "./programs/compose.ts"
export * as AnthropicMessages from "./layers/providers/AnthropicMessages.ts"
export * as DeterministicSummarizer from "./layers/memory/DeterministicSummarizer.ts"
export * as DockerSandbox from "./layers/sandbox/DockerSandbox.ts"
export * as HttpChannel from "./layers/channels/HttpChannel.ts"
export * as LcmMemory from "./layers/memory/LcmMemory.ts"
export * as ModelSummarizer from "./layers/memory/ModelSummarizer.ts"
export * as OpenAiChat from "./layers/providers/OpenAiChat.ts"
export * as OpenAiResponses from "./layers/providers/OpenAiResponses.ts"
export * as Runtime from "./layers/runtime/Runtime.ts"
export * as SessionPool from "./layers/runtime/SessionPool.ts"
export * as CachedLiveConfig from "./layers/config/CachedLiveConfig.ts"
export * as ToolCatalog from "./layers/tools/ToolCatalog.ts"
export * as WorkspaceTools from "./layers/tools/WorkspaceTools.ts"
export * as MemoryTool from "./layers/tools/memory.ts"
export * as SdkProviderRegistry from "./layers/providers/SdkProviderRegistry.ts"
export * as SimpleMemory from "./layers/memory/SimpleMemory.ts"
export * as Postgres from "./layers/sql/Postgres.ts"
export * as Sqlite from "./layers/sql/Sqlite.ts"
export * as SqliteConfigStore from "./layers/config/SqliteConfigStore.ts"
export * as SqliteMemoryStore from "./layers/memory/SqliteMemoryStore.ts"
