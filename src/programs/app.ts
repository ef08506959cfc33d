/**
 * Compatibility names for the gateway and `anna chat`: the composition itself is in ./layers.ts.
 */
import { AgentRuntime, Memory } from "./layers.ts"

/** Stores (config, providers, agents, usage, memory) and the memory plugin, on `$ANNA_HOME/anna.db`. */
export const coreLayer = Memory

/** The Runtime with everything it needs, plus the core services. */
export const runtimeLayer = AgentRuntime
