/**
 * One fake LLM server for a test file: started before its first test, reset before each (unless
 * `reset: false`), closed after the last; folders the tests hand to `keep` are removed then too.
 */
import { afterAll, beforeAll, beforeEach } from "vitest"
import { removeTemp } from "../cleanup.ts"
import { type FakeLlm, startFakeLlm } from "./server.ts"

export const fakeLlmSuite = (options: { readonly reset?: boolean } = {}) => {
  let server: FakeLlm | undefined
  const folders: Array<string> = []
  beforeAll(async () => {
    server = await startFakeLlm()
  })
  if (options.reset !== false) beforeEach(() => server?.reset())
  afterAll(async () => {
    await server?.close()
    // removeTemp: a home may hold workspace filesystems still mounted (an anna the test ran made them).
    for (const f of folders) await removeTemp(f)
  })
  return {
    /** The server, while the file's tests run. */
    get fake(): FakeLlm {
      if (server === undefined) throw new Error("the fake LLM server runs only while the tests do")
      return server
    },
    /** `folder`, removed after the file's tests. */
    keep: (folder: string): string => {
      folders.push(folder)
      return folder
    }
  }
}
