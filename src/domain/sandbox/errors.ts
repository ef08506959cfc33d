/**
 * Sandbox failures. Every one of them means "nothing ran": the sandbox fails closed and never falls
 * back to the host. Messages say how to fix the cause.
 */
import { Schema } from "effect"

export class DockerUnavailable extends Schema.TaggedError<DockerUnavailable>()("DockerUnavailable", {
  detail: Schema.String
}) {
  override get message() {
    return `Docker is not reachable (${this.detail}); start the Docker daemon (e.g. \`sudo systemctl start docker\`, or \`dockerd\`) and check that this user may use it (DOCKER_HOST, the docker group). Tools stay disabled until then: nothing runs on the host.`
  }
}

export class ImageMissing extends Schema.TaggedError<ImageMissing>()("ImageMissing", {
  image: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `sandbox image ${this.image} is not available (${this.detail}); build one with \`anna sandbox build-image\` (from the static busybox on PATH: apt-get install busybox-static; or --rootfs <dir-or-tar>, see README, "Sandbox image"), or pull it where a registry is reachable`
  }
}

export class InvalidNetworkPolicy extends Schema.TaggedError<InvalidNetworkPolicy>()("InvalidNetworkPolicy", {
  policy: Schema.String
}) {
  override get message() {
    return `invalid sandbox network policy "${this.policy}": use "disabled" (no network) or "allow_all" (anna agent set <id> --network …)`
  }
}

/** The policy is valid but this Docker engine cannot enforce it (e.g. no bridge network for allow_all). */
export class PolicyUnenforceable extends Schema.TaggedError<PolicyUnenforceable>()("PolicyUnenforceable", {
  policy: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `the Docker engine cannot enforce the sandbox policy ${this.policy}: ${this.detail}`
  }
}

/** The container's effective settings differ from what was asked: it was removed, nothing ran. */
export class PolicyViolation extends Schema.TaggedError<PolicyViolation>()("PolicyViolation", {
  problems: Schema.Array(Schema.String)
}) {
  override get message() {
    return `the sandbox container does not match its policy (${this.problems.join("; ")}); it was removed and nothing ran`
  }
}

/** Docker failed during an operation of a running session (daemon stopped, container gone, …). */
export class SandboxFailure extends Schema.TaggedError<SandboxFailure>()("SandboxFailure", {
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `sandbox ${this.operation} failed: ${this.detail}`
  }
}

/** A path that leaves the workspace (`..`, an absolute path elsewhere, a symlink pointing out). */
export class PathOutsideWorkspace extends Schema.TaggedError<PathOutsideWorkspace>()("PathOutsideWorkspace", {
  path: Schema.String
}) {
  override get message() {
    return `path ${this.path} is outside the workspace; only files under /workspace can be used`
  }
}

/** A file operation in the workspace was refused (outside, missing, not a regular file, too big, over quota). */
export class WorkspaceFileError extends Schema.TaggedError<WorkspaceFileError>()("WorkspaceFileError", {
  path: Schema.String,
  kind: Schema.Literals(["outside", "missing", "directory", "not_regular", "too_big", "quota", "other"]),
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** Too many live sandboxes (for this user, or on this gateway): nothing was started. */
export class SandboxLimitReached extends Schema.TaggedError<SandboxLimitReached>()("SandboxLimitReached", {
  scope: Schema.Literals(["user", "total"]),
  limit: Schema.Number
}) {
  override get message() {
    return this.scope === "user"
      ? `this user already has ${this.limit} live sandbox(es), the most allowed; finish or /new fewer conversations at once, or wait until an idle one is closed (operator: anna settings set sandbox.max_per_user N)`
      : `the gateway already runs ${this.limit} sandboxes, the most allowed; try again when one is closed (operator: anna settings set sandbox.max_total N)`
  }
}

/** The session's container was closed (its agent's sandbox settings changed, or the session ended). */
export class SandboxClosed extends Schema.TaggedError<SandboxClosed>()("SandboxClosed", {
  reason: Schema.String
}) {
  override get message() {
    return `the sandbox was closed: ${this.reason}; the next message gets a new one`
  }
}

export type SandboxStartError = DockerUnavailable | ImageMissing | InvalidNetworkPolicy | PolicyUnenforceable | PolicyViolation | SandboxFailure | SandboxLimitReached | SandboxClosed
