/** The sandbox's configuration and results: what a session enforces and what a command returns. */

export type NetworkPolicy = "disabled" | "allow_all"
export const NETWORK_POLICIES: ReadonlyArray<NetworkPolicy> = ["disabled", "allow_all"]

/** The image anna builds for itself (`anna sandbox build-image`) and uses unless an agent names another. */
export const DEFAULT_IMAGE = "anna-sandbox:latest"
/** Where the agent's workspace is mounted in every container. */
export const WORKSPACE_MOUNT = "/workspace"
/** Docker label marking anna's containers, so ones orphaned by a crash can be found and removed. */
export const SANDBOX_LABEL = "dev.anna.sandbox"

export interface SandboxLimits {
  readonly memoryMb: number
  readonly cpus: number
  readonly pids: number
  /** Size of the writable /tmp (tmpfs), MiB. */
  readonly tmpMb: number
  /** Disk quota of the workspace, MiB (its filesystem's size, or a soft check; see DiskBound and README). */
  readonly diskMb: number
}

export const DEFAULT_LIMITS: SandboxLimits = { memoryMb: 1024, cpus: 1, pids: 256, tmpMb: 256, diskMb: 1024 }

/** Live containers allowed at once, per user and on the whole gateway (settings sandbox.max_per_user / max_total). */
export interface SandboxCaps {
  readonly perUser: number
  readonly total: number
}

export const DEFAULT_CAPS: SandboxCaps = { perUser: 3, total: 16 }

export interface SandboxSpec {
  readonly agentId: string
  /** Whose sandbox it is (counted against the per-user cap); '' = nobody in particular (CLI, tests). */
  readonly userId: string
  /** Host folder mounted at /workspace (created if missing). */
  readonly workspace: string
  readonly image: string
  /** A string, not the union: configuration from outside is checked at session start (fail closed). */
  readonly network: string
  readonly limits: SandboxLimits
}

/**
 * How a workspace's disk quota is held (setting `sandbox.disk_bound`): `filesystem` — a filesystem of
 * the quota's size per workspace, a hard bound (needs anna to run as root; fails closed otherwise);
 * `quota` — a soft check after every command; `auto` — filesystem where anna can mount, else quota.
 */
export type DiskBound = "auto" | "filesystem" | "quota"
export const DISK_BOUNDS: ReadonlyArray<DiskBound> = ["auto", "filesystem", "quota"]
/** The setting's value as a DiskBound (anything else: auto). */
export const diskBoundOf = (value: string): DiskBound => DISK_BOUNDS.find((b) => b === value) ?? "auto"

export interface ExecOptions {
  /** Working directory inside the container (default: the session's working directory). */
  readonly cwd?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Milliseconds before the command and everything it started are killed (default 120 s). */
  readonly timeoutMs?: number | undefined
  readonly stdin?: string | undefined
  /**
   * Bytes kept of each of stdout and stderr — the first and the last half; what lies between is
   * counted, not kept, and marked in the text (default 1 MiB).
   */
  readonly maxOutputBytes?: number | undefined
}

export interface ExecResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
  /** Bytes produced beyond `maxOutputBytes` and dropped. */
  readonly stdoutDropped: number
  readonly stderrDropped: number
  readonly timedOut: boolean
  readonly durationMs: number
}

export const DEFAULT_EXEC_TIMEOUT_MS = 120_000
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024
