/**
 * Sandbox — isolated execution for an agent's tools (seed 001, "Sandbox Architecture"). `Sandbox`
 * starts sessions; a `SandboxSession` is one runner session's workspace and container, alive for
 * the scope it was started in (interruption and failure remove it too). The container is created
 * when a command first needs it (caps on live containers apply then). The workspace is a host
 * folder mounted at /workspace; the file tools use `readFile`/`writeFile`, which reach it from the
 * host without ever opening anything outside it (src/layers/sandbox/confinedFs.ts says how). Fails
 * closed: when a container cannot start exactly as configured, nothing runs, and there is never a
 * fallback to the host.
 *
 * Layers: `DockerSandbox.layer` (src/layers/sandbox/DockerSandbox.ts).
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { PathOutsideWorkspace, SandboxFailure, SandboxStartError, WorkspaceFileError } from "../domain/sandbox/errors.ts"
import type { DiskBound, ExecOptions, ExecResult, SandboxCaps, SandboxSpec } from "../domain/sandbox/types.ts"

/** A long-lived process (e.g. a local MCP server) with its stdio. */
export interface SandboxProcess {
  readonly stdout: Stream.Stream<Uint8Array, SandboxFailure>
  readonly stderr: Stream.Stream<Uint8Array, SandboxFailure>
  readonly write: (data: string | Uint8Array) => Effect.Effect<void, SandboxFailure>
  /** Closes stdin. */
  readonly end: Effect.Effect<void>
  /** Completes with the exit code when the process ends. */
  readonly exitCode: Effect.Effect<number, SandboxFailure>
  /** Kills the process and everything it started. */
  readonly kill: Effect.Effect<void>
}

/** What `readFile` found: a regular file's bytes, or a folder's entries. */
export type WorkspaceEntry =
  | { readonly _tag: "File"; readonly bytes: Uint8Array }
  | {
    readonly _tag: "Directory"
    /** Sorted by name; at most `maxEntries`, `more` counts the rest. */
    readonly entries: ReadonlyArray<{ readonly name: string; readonly kind: "dir" | "file" | "link" | "other"; readonly target?: string | undefined }>
    readonly more: number
  }

export interface SandboxSession {
  readonly spec: SandboxSpec
  /** The container's id once one runs. */
  readonly containerId: Effect.Effect<string | undefined>
  /** The logical working directory inside the container (starts at /workspace). */
  readonly workingDir: Effect.Effect<string>
  readonly setWorkingDir: (path: string) => Effect.Effect<string, PathOutsideWorkspace>
  /**
   * Runs `/bin/sh -c command` (starting the container first if none runs); a timeout kills the
   * command and everything it started.
   */
  readonly exec: (command: string, options?: ExecOptions) => Effect.Effect<ExecResult, SandboxFailure | SandboxStartError>
  /**
   * A path as the container sees it (relative to the working directory, or absolute under
   * /workspace): a regular file (at most `maxBytes`) or a folder. Refused when it leads outside the
   * workspace (symlinks included, whatever runs meanwhile), is not a regular file, or is too big.
   */
  readonly readFile: (
    path: string,
    limits: { readonly maxBytes: number; readonly maxEntries: number }
  ) => Effect.Effect<WorkspaceEntry, WorkspaceFileError>
  /** Creates or replaces a file atomically (missing folders created), within the workspace and its quota. */
  readonly writeFile: (
    path: string,
    data: string
  ) => Effect.Effect<{ readonly bytes: number; readonly replaced: number | undefined }, WorkspaceFileError>
  /** Starts a process whose lifetime is the given scope (killed when it closes). */
  readonly startProcess: (
    command: ReadonlyArray<string>,
    options?: { readonly cwd?: string | undefined; readonly env?: Readonly<Record<string, string>> | undefined }
  ) => Effect.Effect<SandboxProcess, SandboxFailure | SandboxStartError, Scope.Scope>
  /** Removes the container now (if one runs); later commands fail with SandboxClosed. */
  readonly close: (reason: string) => Effect.Effect<void>
}

/** How a session is limited beyond its spec; the defaults suit one-off sessions (the CLI, tests). */
export interface StartOptions {
  /** The live-container caps, read at every admission and command (default DEFAULT_CAPS). */
  readonly caps?: Effect.Effect<SandboxCaps> | undefined
  /** How the workspace's disk quota is held (default auto). */
  readonly diskBound?: DiskBound | undefined
}

export class Sandbox extends Context.Service<Sandbox, {
  /**
   * Starts a session: the workspace is prepared now; the container is created (and verified against
   * the policy) when a command first needs it, and removed when the scope closes.
   */
  readonly start: (spec: SandboxSpec, options?: StartOptions) => Effect.Effect<SandboxSession, SandboxStartError, Scope.Scope>
  /**
   * Whether a container for `spec` could start now — the engine answers, the image is there (or may
   * be pulled), the network policy can be enforced — without creating anything. The runtime asks
   * before it offers sandboxed tools, so an agent without a sandbox still talks, with its tools off.
   */
  readonly check: (spec: SandboxSpec) => Effect.Effect<void, SandboxStartError>
  /**
   * The workspace of `spec` ready on the host — created, and its own filesystem mounted there when it
   * has one — without a container; its real host path. For the host's own look at a workspace (the
   * heartbeat's `lstat`), which would otherwise see the empty folder under an unmounted filesystem.
   */
  readonly prepare: (spec: SandboxSpec, options?: StartOptions) => Effect.Effect<string, SandboxFailure>
  /** Live containers of this gateway (for caps and diagnostics). */
  readonly live: Effect.Effect<number>
}>()("anna/Sandbox") {}
