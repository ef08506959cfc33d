/**
 * What runs inside a sandbox container, seen from inside it: a listing of the container's
 * processes, a wait until a process shows up (so a test observes that a command really runs before
 * it kills it), and whether one runs now. Works on a SandboxSession or, through `containerShell`,
 * on any container (a `docker exec` gets a session of its own, as the sandbox's commands do).
 */
import type Docker from "dockerode"
import { Effect } from "effect"
import { Writable } from "node:stream"
import { assert } from "@effect/vitest"

/** Runs a shell command in a container. A SandboxSession is one. */
export interface Shell {
  readonly exec: (command: string) => Effect.Effect<{ readonly exitCode: number; readonly stdout: string; readonly stderr: string }, unknown>
}

/**
 * Every process of the container as "pid: command line", except PID 1, its own children (session 1:
 * the keep-alive's sleep) and this listing's own session.
 */
export const LIST = `cat /proc/[0-9]*/stat 2>/dev/null |
  awk -v me=$$ '{ s = $0; sub(/^.*\\) /, "", s); split(s, f, " "); sid[$1] = f[4] }
    END { for (p in sid) if (p != 1 && sid[p] != 1 && sid[p] != sid[me]) print p }' |
  while read -r p; do printf '%s: %s\\n' "$p" "$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; done`

/**
 * Waits (at most 10 s, polling inside the container) until some process's command line contains
 * `text`: the observation that a command really runs.
 */
export const waitForProcess = (s: Shell, text: string) =>
  Effect.gen(function*() {
    const r = yield* s.exec(`i=0; until (${LIST}) | grep -qF -- '${text}'; do i=$((i + 1)); [ $i -ge 100 ] && exit 1; sleep 0.1; done`)
    assert.strictEqual(r.exitCode, 0, `no process "${text}" appeared`)
  })

/** Whether a process whose command line contains `text` runs now. */
export const runs = (s: Shell, text: string) => Effect.map(s.exec(`(${LIST}) | grep -qF -- '${text}'`), (r) => r.exitCode === 0)

/** `sh -c` in a running container through the engine (`docker exec`), stdout and stderr apart. */
export const containerShell = (docker: Docker, id: string): Shell => ({
  exec: (command) =>
    Effect.promise(async () => {
      const container = docker.getContainer(id)
      const exec = await container.exec({ Cmd: ["/bin/sh", "-c", command], AttachStdout: true, AttachStderr: true })
      const stream = await exec.start({ hijack: true, stdin: false })
      const out: Array<Buffer> = []
      const err: Array<Buffer> = []
      const into = (chunks: Array<Buffer>) =>
        new Writable({
          write: (chunk: Buffer, _encoding, callback) => {
            chunks.push(chunk)
            callback()
          }
        })
      await new Promise<void>((done, fail) => {
        docker.modem.demuxStream(stream, into(out), into(err))
        stream.on("end", () => done())
        stream.on("error", fail)
      })
      const info = await exec.inspect()
      return { exitCode: info.ExitCode ?? -1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }
    })
})
