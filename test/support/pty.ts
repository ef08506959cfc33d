/**
 * The real `anna` CLI on a pseudo-terminal, as a person at a terminal runs it: util-linux `script`
 * gives the process a pty and passes what the test writes to it as keystrokes. The test waits for
 * text to appear on the screen — never a fixed delay.
 */
import { spawn } from "node:child_process"
import { finish, MAIN, type Run } from "./cli.ts"
import { childEnv } from "./spawnAnna.ts"

const quote = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`

export interface PtySession {
  /** Keystrokes (e.g. "hello\r", "\x04" for Ctrl-D). */
  readonly type: (keys: string) => void
  /** Resolves once `text` is on the screen more than `seen` times (what came before included). */
  readonly screen: (text: string, seen?: number) => Promise<void>
  /** How many times `text` is on the screen so far. */
  readonly count: (text: string) => number
  readonly output: () => string
  readonly done: Promise<Run>
}

export const ptyAnna = (home: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): PtySession => {
  const command = [process.execPath, MAIN, ...args].map(quote).join(" ")
  const child = spawn("script", ["-q", "-e", "-c", command, "/dev/null"], {
    env: { ...childEnv(home, env), ANNA_LOG_LEVEL: "warn", TERM: "xterm", ...env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let screen = ""
  const waiters: Array<() => void> = []
  const onData = (d: Buffer) => {
    screen += d.toString()
    for (const w of waiters.splice(0)) w()
  }
  child.stdout.on("data", onData)
  child.stderr.on("data", onData)
  const done = finish(child)
  const count = (text: string) => screen.split(text).length - 1
  return {
    type: (keys) => void child.stdin.write(keys),
    screen: (text, seen = 0) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (count(text) > seen) return resolve()
          waiters.push(check)
        }
        void done.then(() => (count(text) > seen ? resolve() : reject(new Error(`the chat ended before showing ${JSON.stringify(text)}:\n${screen}`))))
        check()
      }),
    count,
    output: () => screen,
    done
  }
}
