/**
 * anna's public entry for custom deployments: the service contracts (ports) a deployment composes
 * and the domain types they speak. The layers that implement them are in `anna/layers`; a
 * deployment picks one layer per port and provides them in its own composition root (see
 * examples/simple-http and src/programs/layers.ts, the CLI's own composition).
 *
 * Everything not exported here or from `anna/layers` is internal and may change without notice.
 */
export { AgentStore } from "./services/AgentStore.ts"
export { ChatModel } from "./services/ChatModel.ts"
export { Compactor } from "./services/Compactor.ts"
export { ConfigStore } from "./services/ConfigStore.ts"
export { HttpAddress } from "./services/HttpAddress.ts"
export { MemoryProvider } from "./services/MemoryProvider.ts"
export { MemoryStore } from "./services/MemoryStore.ts"
export { ProfileStore } from "./services/ProfileStore.ts"
export { ProviderRegistry } from "./services/ProviderRegistry.ts"
export { ProviderStore } from "./services/ProviderStore.ts"
export { Runtime } from "./services/Runtime.ts"
export { SessionPool } from "./services/SessionPool.ts"
export { LiveConfig } from "./services/LiveConfig.ts"
export { ToolCatalog } from "./services/ToolCatalog.ts"
export type { ToolSession, ToolSource } from "./services/ToolCatalog.ts"
export type { Tool, ToolCallContext, ToolDefinition } from "./domain/tool.ts"
export { Sandbox } from "./services/Sandbox.ts"
export { Searcher } from "./services/Searcher.ts"
export { Summarizer } from "./services/Summarizer.ts"
export { UsageLog } from "./services/UsageLog.ts"
export type { ChatTarget, ResolvedChat, TurnEvent, UserMessage } from "./domain/runtime/types.ts"
export type { Message, NewMessage } from "./domain/message.ts"
