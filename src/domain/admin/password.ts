/**
 * Password hashing for accounts (issue 13): scrypt, memory-hard, with Node's own implementation
 * (node:crypto, run on libuv's thread pool so a login does not block the event loop).
 *
 * Stored form: `scrypt$N$r$p$saltB64$hashB64` — the parameters travel with each hash, so they can be
 * raised later without breaking stored passwords; verification reads them back but refuses absurd
 * ones (a tampered row must not make a login allocate gigabytes or spin for minutes).
 *
 * A login for a user that does not exist verifies against DUMMY_HASH, so it costs the same KDF time
 * as a wrong password: timing does not tell which usernames exist. Passwords are compared as their
 * NFC normal form (the same password typed on two systems may arrive composed differently).
 */
import { Effect } from "effect"
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../../services/Accounts.ts"

/** The parameters new hashes get: N=2^15, r=8, p=1 (32 MiB, tens of milliseconds), 16-byte salt, 32-byte key. */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1, saltBytes: 16, keyBytes: 32 } as const

/** Bounds a stored hash's parameters must keep to (anything else is treated as a wrong password). */
const LIMITS = { minLogN: 10, maxLogN: 20, maxR: 32, maxP: 16, maxMemory: 256 * 1024 * 1024, minBytes: 8, maxBytes: 128 } as const

/** A hash of no one's password (with SCRYPT_PARAMS), for logins of users that do not exist. */
export const DUMMY_HASH = "scrypt$32768$8$1$tH0Z5sh4Htp4U+6H8NoqGg==$Coc2Heu9HF6RWJ26gvzCmpyyD6EbVkdhthyKvlaoEos="

/** Why a new password is refused, or undefined. */
export const passwordProblem = (password: string): string | undefined => {
  const n = [...password.normalize("NFC")].length
  return n < MIN_PASSWORD_LENGTH
    ? `a password needs at least ${MIN_PASSWORD_LENGTH} characters`
    : n > MAX_PASSWORD_LENGTH
    ? `a password may have at most ${MAX_PASSWORD_LENGTH} characters`
    : undefined
}

interface Params {
  readonly N: number
  readonly r: number
  readonly p: number
  readonly salt: Buffer
  readonly hash: Buffer
}

/** scrypt needs about 128·N·r bytes; Node's default cap (32 MiB) is exactly N=2^15, r=8, so it is raised. */
const maxmemFor = (N: number, r: number, p: number): number => 128 * N * r + 128 * r * p + 16 * 1024 * 1024

const kdf = (password: string, salt: Buffer, keyBytes: number, N: number, r: number, p: number) =>
  Effect.callback<Buffer>((resume) => {
    scrypt(password.normalize("NFC"), salt, keyBytes, { N, r, p, maxmem: maxmemFor(N, r, p) }, (err, key) => {
      // Parameters are checked before: a failure here is a bug or an exhausted machine.
      resume(err === null ? Effect.succeed(key) : Effect.die(err))
    })
  })

const isB64 = (s: string): boolean => /^[A-Za-z0-9+/]+={0,2}$/.test(s)

const isPowerOfTwo = (n: number): boolean => Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0

/** A stored hash's parts, or undefined when it is not one this code accepts. */
export const parseHash = (stored: string): Params | undefined => {
  const parts = stored.split("$")
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined
  const [, n, r, p, salt = "", hash = ""] = parts
  if (![n, r, p].every((x) => x !== undefined && /^[1-9]\d{0,9}$/.test(x))) return undefined
  const N = Number(n)
  const R = Number(r)
  const P = Number(p)
  if (!isPowerOfTwo(N) || N < 2 ** LIMITS.minLogN || N > 2 ** LIMITS.maxLogN) return undefined
  if (R > LIMITS.maxR || P > LIMITS.maxP || 128 * N * R > LIMITS.maxMemory) return undefined
  if (!isB64(salt) || !isB64(hash)) return undefined
  const saltBytes = Buffer.from(salt, "base64")
  const hashBytes = Buffer.from(hash, "base64")
  const sized = (b: Buffer) => b.length >= LIMITS.minBytes && b.length <= LIMITS.maxBytes
  if (!sized(saltBytes) || !sized(hashBytes)) return undefined
  return { N, r: R, p: P, salt: saltBytes, hash: hashBytes }
}

/** A new hash of `password` with a fresh random salt, in the stored form. */
export const hashPassword = (password: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    const { N, r, p, saltBytes, keyBytes } = SCRYPT_PARAMS
    const salt = randomBytes(saltBytes)
    const key = yield* kdf(password, salt, keyBytes, N, r, p)
    return `scrypt$${N}$${r}$${p}$${salt.toString("base64")}$${key.toString("base64")}`
  })

/**
 * Whether `password` matches `stored`, compared in constant time. A stored value that is not a
 * hash this code accepts matches nothing, after the same work as a real check (against DUMMY_HASH).
 */
export const verifyPassword = (password: string, stored: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const parsed = parseHash(stored)
    const target = parsed ?? parseHash(DUMMY_HASH)
    if (target === undefined) return yield* Effect.die("DUMMY_HASH does not parse")
    // An absurdly long input is refused before the KDF (scrypt would take it, but there is no need).
    const input = password.length > 4 * MAX_PASSWORD_LENGTH ? "" : password
    const key = yield* kdf(input, target.salt, target.hash.length, target.N, target.r, target.p)
    const same = key.length === target.hash.length && timingSafeEqual(key, target.hash)
    return parsed !== undefined && input === password && same
  })

/** The same work as checking a password, for a login whose user or account does not exist. */
export const spendVerifyTime = (password: string): Effect.Effect<void> => Effect.asVoid(verifyPassword(password, DUMMY_HASH))
