/**
 * What the workspace tools share: decoding a tool's input, reading a file as UTF-8 text (or
 * recognising it as binary), and writing through the session. Every file operation goes through
 * the session's `readFile`/`writeFile`, which walk the path from the workspace's own folder handle
 * without following any symlink the kernel could be tricked into (src/layers/sandbox/confinedFs.ts):
 * nothing outside the workspace is ever opened, whatever runs in the container at the same time.
 */
import { Effect, Schema } from "effect"
import type { WorkspaceFileError } from "../../domain/sandbox/errors.ts"
import { ToolError } from "../../domain/tool.ts"
import type { SandboxSession, WorkspaceEntry } from "../../services/Sandbox.ts"

/** Files larger than this are not loaded whole; bash (head, sed -n, grep) can look at parts of them. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024
/** Entries shown when a path is a directory. */
export const MAX_ENTRIES = 500

/** Decodes a tool's raw input; every problem (not only the first) goes back to the model. */
export const decodeInput = <S extends Schema.Constraint & { readonly DecodingServices: never }>(tool: string, schema: S) => {
  const decode = Schema.decodeUnknownEffect(schema)
  return (raw: unknown): Effect.Effect<S["Type"], ToolError> =>
    decode(raw, { errors: "all", onExcessProperty: "error" }).pipe(
      Effect.mapError((e) => new ToolError({ tool, reason: `invalid input: ${e.message}` }))
    )
}

const toolError = (tool: string) => (e: WorkspaceFileError) => new ToolError({ tool, reason: e.reason })

/** UTF-8 without a NUL byte is text; anything else is treated as binary and never shown or edited. */
export const decodeText = (bytes: Uint8Array): string | undefined => {
  if (bytes.includes(0)) return undefined
  try {
    // ignoreBOM keeps a leading BOM in the text, so an edit writes it back unchanged.
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return undefined
  }
}

export type Loaded =
  | { readonly _tag: "Text"; readonly text: string; readonly bytes: number }
  | { readonly _tag: "Binary"; readonly bytes: number }
  | Extract<WorkspaceEntry, { readonly _tag: "Directory" }>

const tooBig = (tool: string, reason: string) =>
  new ToolError({
    tool,
    reason: `${reason}, more than the ${MAX_FILE_BYTES / 1024 / 1024} MiB this tool loads; use bash to work on parts of it (e.g. sed -n '100,200p', grep -n, head, tail)`
  })

/** A file as text or binary, or a folder's entries; refuses huge files with a way forward. */
export const loadPath = (session: SandboxSession, tool: string, path: string, missing = `no such file: ${path}`): Effect.Effect<Loaded, ToolError> =>
  path.trim() === ""
    ? Effect.fail(new ToolError({ tool, reason: "path is empty" }))
    : session.readFile(path, { maxBytes: MAX_FILE_BYTES, maxEntries: MAX_ENTRIES }).pipe(
      Effect.mapError((e) =>
        e.kind === "missing" ? new ToolError({ tool, reason: missing }) : e.kind === "too_big" ? tooBig(tool, e.reason) : toolError(tool)(e)
      ),
      Effect.map((entry): Loaded => {
        if (entry._tag === "Directory") return entry
        const text = decodeText(entry.bytes)
        return text === undefined ? { _tag: "Binary", bytes: entry.bytes.length } : { _tag: "Text", text, bytes: entry.bytes.length }
      })
    )

/** A file's text (refusing folders and binary files). */
export const loadFile = (session: SandboxSession, tool: string, path: string, missing?: string) =>
  Effect.flatMap(loadPath(session, tool, path, missing), (loaded) =>
    loaded._tag === "Directory" ? Effect.fail(new ToolError({ tool, reason: `${path} is a directory` })) : Effect.succeed(loaded))

export interface Written {
  readonly bytes: number
  /** Size of the file it replaced, if there was one. */
  readonly replaced: number | undefined
}

/**
 * Writes `data` to `path` atomically (a temp file in the same folder, flushed, then renamed over
 * the target): readers see the old file or the new one, never a mix. Missing folders are created;
 * an existing file keeps its permissions.
 */
export const atomicWrite = (session: SandboxSession, tool: string, path: string, data: string): Effect.Effect<Written, ToolError> =>
  path.trim() === ""
    ? Effect.fail(new ToolError({ tool, reason: "path is empty" }))
    : session.writeFile(path, data).pipe(Effect.mapError(toolError(tool)))
