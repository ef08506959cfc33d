/**
 * The memory layer chosen by configuration: whichever memory plugin is enabled in the `plugins`
 * table (LcmMemory or SimpleMemory). Needs SqlClient, PluginStore and a Summarizer (LCM's DAG
 * compaction and Simple's handoff compaction both use it).
 */
import { Effect, Layer } from "effect"
import { PluginStore } from "../../services/PluginStore.ts"
import * as LcmMemory from "./LcmMemory.ts"
import * as SimpleMemory from "./SimpleMemory.ts"

export const layer = Layer.unwrap(
  Effect.gen(function*() {
    const plugins = yield* PluginStore
    const id = yield* plugins.enabledMemory
    return id === SimpleMemory.NAME ? SimpleMemory.layerSqlite : LcmMemory.layerSqlite
  })
)
