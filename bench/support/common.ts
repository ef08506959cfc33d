/** Shared bits of the benchmark phases: sessions, file sizes, and the ratio summary. */
import { existsSync, rmSync, statSync } from "node:fs"
import { sessionRefFromKey } from "../../src/domain/memory/session.ts"

/** Session `i` of user `i % users`, keyed like the gateway does (`agent:platform:user:context`). */
export const sessionOf = (i: number, users: number) => sessionRefFromKey(`bench:cli:u${i % users}:s${i}`)

/** Size of a database with its WAL and shared-memory files. */
export const dbBytes = (file: string): number =>
  ["", "-wal", "-shm"].reduce((n, suffix) => n + (existsSync(file + suffix) ? statSync(file + suffix).size : 0), 0)

export const removeDb = (file: string): void => {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(file + suffix, { force: true })
}

/** One line of the closing "ratio to the floor" table. */
export interface RatioRow {
  readonly operation: string
  readonly ours: string
  readonly floor: string
  readonly ratio: string
}

export const ratios: Array<RatioRow> = []
