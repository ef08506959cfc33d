/**
 * The hardened container a sandbox session runs in, and the check that a created container really
 * is that (pure functions over Docker's create options and inspect output). Defaults: no
 * capabilities, no privilege escalation, a read-only root filesystem with a small writable /tmp,
 * the workspace as the only bind mount (never the Docker socket), memory/CPU/pids limits, the
 * network off unless the policy is allow_all, and an unprivileged user (see `sandboxUser`).
 */
import type Docker from "dockerode"
import { type NetworkPolicy, SANDBOX_LABEL, type SandboxLimits, WORKSPACE_MOUNT } from "../../../domain/sandbox/types.ts"

export const OWNER_LABEL = "dev.anna.owner"
export const AGENT_LABEL = "dev.anna.agent"
/** Which installation (ANNA_HOME on its host) made the container: see `installationOf` in ./client.ts. */
export const INSTALLATION_LABEL = "dev.anna.installation"

/** PID 1 of the container: waits forever, exits on SIGTERM (so `docker stop` is quick). */
export const KEEPALIVE = ["/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]

export interface ContainerPlan {
  readonly image: string
  readonly network: NetworkPolicy
  readonly limits: SandboxLimits
  /** Real host path of the workspace. */
  readonly workspace: string
  readonly user: string
  readonly owner: string
  readonly agentId: string
  /** The installation's label value; a deployment without one (no AppConfig) labels none. */
  readonly installation?: string | undefined
}

const uidOf = (user: string): number => Number(user.split(":")[0] ?? FALLBACK_UID)
const gidOf = (user: string): number => Number(user.split(":")[1] ?? user.split(":")[0] ?? FALLBACK_UID)

export const createOptions = (plan: ContainerPlan): Docker.ContainerCreateOptions => ({
  Image: plan.image,
  Cmd: [...KEEPALIVE],
  Entrypoint: [],
  User: plan.user,
  WorkingDir: WORKSPACE_MOUNT,
  Labels: {
    [SANDBOX_LABEL]: "1",
    [OWNER_LABEL]: plan.owner,
    [AGENT_LABEL]: plan.agentId,
    ...(plan.installation === undefined ? {} : { [INSTALLATION_LABEL]: plan.installation })
  },
  NetworkDisabled: plan.network === "disabled",
  Env: ["HOME=/tmp", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
  HostConfig: {
    NetworkMode: plan.network === "disabled" ? "none" : "bridge",
    CapDrop: ["ALL"],
    CapAdd: [],
    SecurityOpt: ["no-new-privileges"],
    Privileged: false,
    ReadonlyRootfs: true,
    // Owned by the sandbox user: Docker copies the image's /tmp permissions onto the tmpfs and
    // ignores `mode`, so an image with a root-only /tmp would otherwise leave it unwritable.
    Tmpfs: { "/tmp": `rw,nosuid,nodev,uid=${uidOf(plan.user)},gid=${gidOf(plan.user)},mode=1777,size=${plan.limits.tmpMb}m` },
    Binds: [`${plan.workspace}:${WORKSPACE_MOUNT}:rw`],
    Memory: plan.limits.memoryMb * 1024 * 1024,
    MemorySwap: plan.limits.memoryMb * 1024 * 1024,
    NanoCpus: Math.round(plan.limits.cpus * 1e9),
    PidsLimit: plan.limits.pids,
    // No single file may be larger than the workspace's quota (RLIMIT_FSIZE, bytes); see workspaceFiles.ts.
    Ulimits: [{ Name: "fsize", Soft: plan.limits.diskMb * 1024 * 1024, Hard: plan.limits.diskMb * 1024 * 1024 }],
    IpcMode: "private",
    AutoRemove: false
  }
})

/** What differs between a container (`docker inspect`) and its plan; empty when it matches. */
export const verifyContainer = (info: Docker.ContainerInspectInfo, plan: ContainerPlan): Array<string> => {
  const problems: Array<string> = []
  const hc = info.HostConfig
  const wantMode = plan.network === "disabled" ? "none" : "bridge"
  if (hc.NetworkMode !== wantMode) problems.push(`network mode is ${hc.NetworkMode}, expected ${wantMode}`)
  const networks = Object.keys(info.NetworkSettings?.Networks ?? {})
  if (plan.network === "disabled" && networks.some((n) => n !== "none")) problems.push(`attached to networks ${networks.join(", ")}`)
  if (hc.Privileged === true) problems.push("privileged")
  if (!(hc.CapDrop ?? []).map((c: string) => c.toUpperCase()).includes("ALL")) problems.push("capabilities not all dropped")
  if ((hc.CapAdd ?? []).length > 0) problems.push(`capabilities added: ${(hc.CapAdd ?? []).join(", ")}`)
  if (!(hc.SecurityOpt ?? []).some((o: string) => o.startsWith("no-new-privileges") && !o.endsWith("false"))) {
    problems.push("no-new-privileges is not set")
  }
  if (hc.ReadonlyRootfs !== true) problems.push("root filesystem is writable")
  if (hc.Memory !== plan.limits.memoryMb * 1024 * 1024) problems.push(`memory limit is ${hc.Memory}`)
  if (hc.NanoCpus !== Math.round(plan.limits.cpus * 1e9)) problems.push(`CPU limit is ${hc.NanoCpus}`)
  if (hc.PidsLimit !== plan.limits.pids) problems.push(`pids limit is ${hc.PidsLimit}`)
  const fsize = hc.Ulimits?.find((u) => u.Name === "fsize")
  if (fsize?.Hard !== plan.limits.diskMb * 1024 * 1024) problems.push(`file size limit is ${fsize?.Hard ?? "unset"}`)
  if (info.Config.User !== plan.user) problems.push(`runs as "${info.Config.User}", expected ${plan.user}`)
  const mounts = info.Mounts ?? []
  for (const m of mounts) {
    if (m.Destination === WORKSPACE_MOUNT && m.Type === "bind") {
      if (m.Source !== plan.workspace) problems.push(`workspace mount comes from ${m.Source}`)
      if (m.RW !== true) problems.push("workspace is read-only")
    } else if (m.Type === "bind") problems.push(`unexpected bind mount ${m.Source} → ${m.Destination}`)
    else if (m.Type !== "tmpfs" && m.Type !== "volume") problems.push(`unexpected ${m.Type} mount at ${m.Destination}`)
    if (/docker\.sock$/.test(m.Source ?? "")) problems.push("the Docker socket is mounted")
  }
  if (!mounts.some((m) => m.Destination === WORKSPACE_MOUNT)) problems.push("the workspace is not mounted")
  return problems
}

/** The unprivileged user the sandbox runs as when anna itself runs as root. */
export const FALLBACK_UID = 1000

/**
 * "uid:gid" the sandbox runs as: the user anna runs as (files in the workspace then belong to that
 * user on both sides), or uid/gid 1000 when anna runs as root — never root inside the container.
 */
export const sandboxUser = (): string => {
  if (typeof process.getuid !== "function" || typeof process.getgid !== "function") return `${FALLBACK_UID}:${FALLBACK_UID}`
  return process.getuid() === 0 ? `${FALLBACK_UID}:${FALLBACK_UID}` : `${process.getuid()}:${process.getgid()}`
}
