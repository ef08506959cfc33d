/**
 * The running gateway of an ANNA_HOME, as the other commands (and a second gateway) learn it:
 *
 * - `$ANNA_HOME/gateway.lock`: the running gateway keeps an exclusive SQLite transaction open on
 *   this empty file for its whole life. Why this lock and not a pid file or a unix socket: SQLite
 *   takes it with fcntl, which the kernel drops when the process dies, however it dies (`kill -9`
 *   too), so there is never a stale lock to judge; taking it is one atomic step, so two gateways
 *   started at the same instant cannot both win (a pid file, or a socket whose stale file must be
 *   unlinked before the bind, both need a check-then-take that two starts can interleave); it works
 *   on Linux and macOS alike (an abstract unix socket is Linux only, a socket path is limited to
 *   ~100 bytes); and it needs nothing Node lacks (Node has no flock; node:sqlite is anna's driver).
 * - `$ANNA_HOME/gateway.json`: what that gateway serves, `{pid, version, startedAt, host, port,
 *   url}` — host and port as bound (port 0 resolved to the one chosen), url the address to open
 *   from this machine (a wildcard host is loopback); the three are null while the HTTP channel does
 *   not run. Written atomically (a temp file renamed over it) when the gateway has the lock and
 *   whenever its HTTP channel starts, restarts or stops; removed on a clean stop, before the lock
 *   is let go. After a SIGKILL it stays behind: a reader believes it only while the lock is held
 *   and its pid is alive.
 */
import { Effect, Option, Schedule, Schema } from "effect"
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"

export const LOCK_FILE = "gateway.lock"
export const PUBLISHED_FILE = "gateway.json"

export const Published = Schema.Struct({
  pid: Schema.Number,
  version: Schema.String,
  startedAt: Schema.String,
  /** The interface the HTTP channel is bound to, e.g. 127.0.0.1 or 0.0.0.0. */
  host: Schema.NullOr(Schema.String),
  port: Schema.NullOr(Schema.Number),
  /** `http://host:port` as reached from this machine, without a trailing slash. */
  url: Schema.NullOr(Schema.String)
})
export type Published = typeof Published.Type

/** Another gateway holds the lock of this ANNA_HOME (its pid and address when it has said them). */
export class GatewayAlreadyRunning extends Schema.TaggedError<GatewayAlreadyRunning>()("GatewayAlreadyRunning", {
  pid: Schema.optional(Schema.Number),
  url: Schema.optional(Schema.NullOr(Schema.String))
}) {
  override get message() {
    const serving = this.pid === undefined ? "" : this.url ? ` (serving ${this.url})` : " (not serving HTTP now)"
    return `another anna gateway${this.pid === undefined ? "" : ` (pid ${this.pid})`} already runs on this ANNA_HOME${serving}; stop it first`
  }
}

/** `http://host:port` to open from this machine: a wildcard address is reached on loopback. */
export const localUrl = (host: string, port: number): string => {
  const h = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host
  return `http://${h}:${port}`
}

const decode = Schema.decodeUnknownOption(Schema.fromJsonString(Published))

/** gateway.json as written, whoever wrote it (undefined when missing or unreadable). */
const readPublished = (home: string): Published | undefined => {
  try {
    return Option.getOrUndefined(decode(readFileSync(join(home, PUBLISHED_FILE), "utf8")))
  } catch {
    return undefined
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: it exists, as another user's process.
    return typeof e === "object" && e !== null && "code" in e && e.code === "EPERM"
  }
}

const isBusy = (e: unknown): boolean => typeof e === "object" && e !== null && "errcode" in e && (e.errcode === 5 || e.errcode === 6)

/**
 * Whether a gateway holds the lock: a read of the lock file, which the holder's exclusive
 * transaction refuses at once. The read's own lock lasts microseconds (a starting gateway retries).
 */
const lockHeld = (home: string): boolean => {
  const path = join(home, LOCK_FILE)
  if (!existsSync(path)) return false
  try {
    const db = new DatabaseSync(path, { timeout: 0 })
    try {
      db.prepare("SELECT count(*) FROM sqlite_master").get()
      return false
    } finally {
      db.close()
    }
  } catch (e) {
    return isBusy(e)
  }
}

/** The gateway running on this ANNA_HOME, as it published itself; none when no gateway runs. */
export const runningGateway = (home: string): Effect.Effect<Option.Option<Published>> =>
  Effect.sync(() => {
    const published = readPublished(home)
    return published !== undefined && alive(published.pid) && lockHeld(home) ? Option.some(published) : Option.none()
  })

/** The lock is busy: whoever holds it, if it has said so (a reader's probe holds it for an instant). */
class Busy extends Schema.TaggedError<Busy>()("Busy", {}) {}

const take = (path: string) =>
  Effect.try({
    try: () => {
      const db = new DatabaseSync(path, { timeout: 0 })
      try {
        db.exec("BEGIN EXCLUSIVE")
        return db
      } catch (e) {
        db.close()
        throw e
      }
    },
    catch: (e) => e
  }).pipe(Effect.catch((e) => (isBusy(e) ? Effect.fail(new Busy()) : Effect.die(e))))

export interface GatewayPresence {
  /** Publishes where the HTTP channel listens now (undefined: it does not run). */
  readonly publish: (http: { readonly host: string; readonly port: number } | undefined) => Effect.Effect<void>
}

/**
 * Takes this ANNA_HOME's gateway lock for the scope, or fails with GatewayAlreadyRunning. A busy
 * lock whose holder has not published a live pid yet (a gateway in its first instant, or a reader's
 * probe) is tried again for 2 s.
 */
export const holdGatewayLock = Effect.fn("gateway.holdLock")(function*(home: string, version: string) {
  mkdirSync(home, { recursive: true, mode: 0o700 })
  const path = join(home, LOCK_FILE)
  const holder = () => {
    const p = readPublished(home)
    return p !== undefined && p.pid !== process.pid && alive(p.pid) ? p : undefined
  }
  yield* Effect.acquireRelease(
    take(path).pipe(
      Effect.catchTag("Busy", (busy): Effect.Effect<never, Busy | GatewayAlreadyRunning> => {
        const p = holder()
        return p === undefined ? Effect.fail(busy) : Effect.fail(new GatewayAlreadyRunning({ pid: p.pid, url: p.url }))
      }),
      Effect.retry({ while: (e) => e._tag === "Busy", schedule: Schedule.spaced("50 millis"), times: 40 }),
      Effect.catchTag("Busy", () => Effect.fail(new GatewayAlreadyRunning({})))
    ),
    (db) =>
      Effect.sync(() => {
        // The file goes before the lock, so a gateway that takes the lock next never loses its own.
        if (readPublished(home)?.pid === process.pid) rmSync(join(home, PUBLISHED_FILE), { force: true })
        db.close()
      })
  )
  const startedAt = new Date().toISOString()
  const publish: GatewayPresence["publish"] = (http) =>
    Effect.try(() => {
      const doc: Published = {
        pid: process.pid,
        version,
        startedAt,
        host: http?.host ?? null,
        port: http?.port ?? null,
        url: http === undefined ? null : localUrl(http.host, http.port)
      }
      const tmp = join(home, `${PUBLISHED_FILE}.${process.pid}.tmp`)
      writeFileSync(tmp, `${JSON.stringify(doc)}\n`, { mode: 0o600 })
      renameSync(tmp, join(home, PUBLISHED_FILE))
    }).pipe(Effect.catch((e) => Effect.logWarning(`cannot write ${join(home, PUBLISHED_FILE)}: ${e.message} (anna doctor and anna admin create will name the configured address)`)))
  // At once, so a second gateway can name this one (its address follows once the channel is up).
  yield* publish(undefined)
  return { publish } satisfies GatewayPresence
})
