/**
 * Password hashing: the stored form and its parameters, verification (right, wrong, composed
 * differently), fresh salts, refused lengths, and stored values that are not hashes this code
 * accepts (absurd parameters, bad encodings) matching nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { scryptSync } from "node:crypto"
import {
  DUMMY_HASH,
  hashPassword,
  parseHash,
  passwordProblem,
  SCRYPT_PARAMS,
  verifyPassword
} from "../../../src/domain/admin/password.ts"
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../../../src/services/Accounts.ts"

describe("password hashes", () => {
  it.effect("are scrypt$N$r$p$salt$hash with N=2^15, r=8, p=1, a 16-byte salt and a 32-byte key that scrypt reproduces", () =>
    Effect.gen(function*() {
      const stored = yield* hashPassword("correct horse")
      const [kind, n, r, p, salt = "", hash = ""] = stored.split("$")
      assert.deepStrictEqual([kind, n, r, p], ["scrypt", "32768", "8", "1"])
      assert.strictEqual(Buffer.from(salt, "base64").length, 16)
      const expected = scryptSync("correct horse", Buffer.from(salt, "base64"), 32, { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 })
      assert.strictEqual(hash, expected.toString("base64"))
      assert.notStrictEqual(yield* hashPassword("correct horse"), stored, "a fresh salt each time")
    }))

  it.effect("verify the right password only, in either Unicode composition", () =>
    Effect.gen(function*() {
      const stored = yield* hashPassword("caf\u00e9 au lait")
      assert.isTrue(yield* verifyPassword("caf\u00e9 au lait", stored))
      assert.isTrue(yield* verifyPassword("cafe\u0301 au lait", stored), "NFC: the same password typed elsewhere")
      assert.isFalse(yield* verifyPassword("cafe au lait", stored))
      assert.isFalse(yield* verifyPassword("", stored))
      assert.isFalse(yield* verifyPassword("x".repeat(5 * MAX_PASSWORD_LENGTH), stored))
    }))

  it.effect("match nothing when the stored value is not an acceptable hash (absurd parameters are never run)", () =>
    Effect.gen(function*() {
      const salt = Buffer.alloc(16, 1).toString("base64")
      const key = scryptSync("pw123456", Buffer.alloc(16, 1), 32, { N: 1024, r: 8, p: 1 }).toString("base64")
      // Small but acceptable parameters verify: the parameters come from the stored value.
      assert.isTrue(yield* verifyPassword("pw123456", `scrypt$1024$8$1$${salt}$${key}`))
      for (
        const bad of [
          `scrypt$1073741824$8$1$${salt}$${key}`, // N = 2^30: gigabytes
          `scrypt$1048576$64$1$${salt}$${key}`, // r too large
          `scrypt$32768$8$1000$${salt}$${key}`, // p too large
          `scrypt$1000$8$1$${salt}$${key}`, // N not a power of two
          `scrypt$512$8$1$${salt}$${key}`, // N too small
          `scrypt$1024$8$1$${salt}$not base64!`,
          `scrypt$1024$8$1$$${key}`,
          `scrypt$1024$8$1$${salt}`,
          `bcrypt$1024$8$1$${salt}$${key}`,
          `scrypt$01024$8$1$${salt}$${key}`,
          "",
          "plain text password"
        ]
      ) {
        assert.isUndefined(parseHash(bad), bad)
        assert.isFalse(yield* verifyPassword("pw123456", bad), bad)
      }
    }))

  it.effect("have a dummy that parses with today's parameters (for logins of users that do not exist)", () =>
    Effect.gen(function*() {
      const dummy = parseHash(DUMMY_HASH)
      assert.deepStrictEqual([dummy?.N, dummy?.r, dummy?.p, dummy?.salt.length, dummy?.hash.length], [
        SCRYPT_PARAMS.N,
        SCRYPT_PARAMS.r,
        SCRYPT_PARAMS.p,
        SCRYPT_PARAMS.saltBytes,
        SCRYPT_PARAMS.keyBytes
      ])
      assert.isFalse(yield* verifyPassword("correct horse", DUMMY_HASH))
    }))

  it("refuse passwords shorter or longer than the contract allows (counted in characters)", () => {
    assert.include(passwordProblem("x".repeat(MIN_PASSWORD_LENGTH - 1)), `at least ${MIN_PASSWORD_LENGTH}`)
    assert.isUndefined(passwordProblem("x".repeat(MIN_PASSWORD_LENGTH)))
    assert.isUndefined(passwordProblem("\u{1F600}".repeat(MIN_PASSWORD_LENGTH)), "8 emoji are 8 characters")
    assert.isUndefined(passwordProblem("x".repeat(MAX_PASSWORD_LENGTH)))
    assert.include(passwordProblem("x".repeat(MAX_PASSWORD_LENGTH + 1)), `at most ${MAX_PASSWORD_LENGTH}`)
  })
})
