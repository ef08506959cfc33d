/**
 * Sandbox — isolated execution for an agent's tools (seed 001, "Sandbox Architecture"). `Sandbox`
 * starts sessions; a `SandboxSession` is one container for one runner session, alive for the scope
 * it was started in (interruption and failure remove it too). The session's workspace is a host
 * folder mounted at /workspace; file tools use `resolvePath` to reach it from the host, and every
 * path is confined to it. Fails closed: when a session cannot start exactly as configured, nothing
 * runs, and there is never a fallback to the host.
 */
import { Context, type Effect, type Scope, type Stream } from "effect"
import type { PathOutsideWorkspace, SandboxFailure, SandboxStartError } from "../domain/sandbox/errors.ts"
import type { ExecOptions, ExecResult, SandboxSpec } from "../domain/sandbox/types.ts"

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

export interface SandboxSession {
  readonly containerId: string
  readonly spec: SandboxSpec
  /** The logical working directory inside the container (starts at /workspace). */
  readonly workingDir: Effect.Effect<string>
  readonly setWorkingDir: (path: string) => Effect.Effect<string, PathOutsideWorkspace>
  /** Runs `/bin/sh -c command`; a timeout kills the command and everything it started. */
  readonly exec: (command: string, options?: ExecOptions) => Effect.Effect<ExecResult, SandboxFailure>
  /**
   * The host path of a path as the container sees it (relative to the working directory, or
   * absolute under /workspace); refused when it leaves the workspace, symlinks included.
   */
  readonly resolvePath: (path: string) => Effect.Effect<string, PathOutsideWorkspace>
  /** Starts a process whose lifetime is the given scope (killed when it closes). */
  readonly startProcess: (
    command: ReadonlyArray<string>,
    options?: { readonly cwd?: string | undefined; readonly env?: Readonly<Record<string, string>> | undefined }
  ) => Effect.Effect<SandboxProcess, SandboxFailure, Scope.Scope>
}

export class Sandbox extends Context.Service<Sandbox, {
  /** Starts a session: container created, verified against the policy, removed when the scope closes. */
  readonly start: (spec: SandboxSpec) => Effect.Effect<SandboxSession, SandboxStartError, Scope.Scope>
}>()("anna/Sandbox") {}

/** The session a runner's tools act in. */
export class CurrentSandbox extends Context.Service<CurrentSandbox, SandboxSession>()("anna/CurrentSandbox") {}
