/**
 * A real `anna gateway` process for end-to-end tests (the built dist/main.js, as ./cli.ts runs it),
 * started on a free HTTP port and waited for until it is up: its HTTP channel's base URL, its output so
 * far, and its end. A gateway that exits before it is up fails the wait with its output.
 */
import type { ChildProcess } from "node:child_process"
import { finish, type Run, start, waitForOutput } from "./cli.ts"

export interface Gateway {
  readonly child: ChildProcess
  /** The OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`). */
  readonly url: string
  /** Resolves when the process has ended. */
  readonly done: Promise<Run>
  /** Everything it wrote so far (stdout and stderr). */
  readonly out: () => string
}

export const startGateway = async (home: string, env: Readonly<Record<string, string>>, logLevel = "info"): Promise<Gateway> => {
  const child = start(home, ["gateway", "--port", "0"], logLevel, env)
  let out = ""
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()))
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()))
  const done = finish(child)
  const exited = done.then((r) => Promise.reject(new Error(`the gateway exited (${r.code ?? r.signal}) before it was up:\n${out}`)))
  await Promise.race([waitForOutput(child, "press Ctrl+C"), exited])
  const url = /HTTP channel \(OpenAI-compatible\) on (\S+);/.exec(out)?.[1]
  if (url === undefined) throw new Error(`no HTTP channel address in:\n${out}`)
  return { child, url, done, out: () => out }
}
