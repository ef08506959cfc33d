/**
 * The built-in workspace tools (seed 001, "Built-in Tools"), one service each so a deployment can
 * leave any of them out and the registry offers only what is present. All of them act in the
 * session's sandbox (`CurrentSandbox`): `bash` runs in the container, `read`/`write`/`edit` reach
 * the workspace from the host through `resolvePath`, so every path is confined to /workspace.
 */
import { Context } from "effect"
import type { Tool } from "../domain/tool.ts"

/** Runs a shell command in the container: exit code, stdout and stderr, timeout, truncation. */
export class BashTool extends Context.Service<BashTool, Tool>()("anna/BashTool") {}
/** Reads a text file (numbered lines, line ranges, truncation) or lists a directory. */
export class ReadTool extends Context.Service<ReadTool, Tool>()("anna/ReadTool") {}
/** Creates or replaces a file atomically (temp file, then rename). */
export class WriteTool extends Context.Service<WriteTool, Tool>()("anna/WriteTool") {}
/** Replaces an exact, unique piece of text in a file, leaving the rest byte-identical. */
export class EditTool extends Context.Service<EditTool, Tool>()("anna/EditTool") {}
