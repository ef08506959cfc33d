/**
 * API tokens with their lineage, for SqliteAccounts: which token minted which
 * (`token_lineage`, migrations/0023_token_lineage.sql), tokens listed with their minter and how many
 * live tokens descend from them, and revocation with or without those descendants.
 *
 * A lineage row outlives its token, so "what did this token mint" has an answer after it is revoked:
 * revoking a stolen token alone, then changing one's mind, is `revoke <same id> --cascade`, and a
 * cascade reaches tokens minted through one that was revoked in between. Tokens issued before the
 * lineage existed (or by ConfigStore.issueToken) have no row: no minter, and minted nothing known.
 */
import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { AccountError } from "../../domain/admin/errors.ts"
import { type MintedTokenInfo, ROLES, type RevokedTokens } from "../../services/Accounts.ts"
import { TOKEN_ID_LENGTH, type TokenInfo } from "../../services/ConfigStore.ts"
import * as Sqlite from "../sql/Sqlite.ts"

const TokenRow = Schema.Struct({
  token_hash: Schema.String,
  user_id: Schema.String,
  label: Schema.String,
  role: Schema.Literals(ROLES),
  created_at: Schema.Number
})
const Edge = Schema.Struct({ token_hash: Schema.String, minted_by: Schema.String })
const Revoked = Schema.Struct({ token_hash: Schema.String, user_id: Schema.String })
const decodeTokens = Schema.decodeUnknownEffect(Schema.Array(TokenRow))
const decodeEdges = Schema.decodeUnknownEffect(Schema.Array(Edge))
const decodeRevoked = Schema.decodeUnknownEffect(Schema.Array(Revoked))

export const tokenId = (hash: string): string => hash.slice(0, TOKEN_ID_LENGTH)

const toTokenInfo = (r: typeof TokenRow.Type): TokenInfo => ({
  id: tokenId(r.token_hash),
  userId: r.user_id,
  label: r.label,
  role: r.role,
  createdAt: r.created_at
})

/** The hashes that descend from `root` through `children` (root excluded). */
const descendantsOf = (root: string, children: ReadonlyMap<string, ReadonlyArray<string>>): Set<string> => {
  const seen = new Set<string>()
  const stack = [...(children.get(root) ?? [])]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (seen.has(next) || next === root) continue
    seen.add(next)
    stack.push(...(children.get(next) ?? []))
  }
  return seen
}

export const make = (sql: SqlClient.SqlClient) => {
  const immediate = Sqlite.immediate(sql)

  const children = Effect.map(
    sql`SELECT token_hash, minted_by FROM token_lineage WHERE minted_by IS NOT NULL`.pipe(Effect.flatMap(decodeEdges)),
    (edges) => {
      const map = new Map<string, Array<string>>()
      for (const e of edges) map.set(e.minted_by, [...(map.get(e.minted_by) ?? []), e.token_hash])
      return map
    }
  )
  const liveTokens = sql`SELECT token_hash, user_id, label, role, created_at FROM user_tokens ORDER BY created_at, token_hash`.pipe(
    Effect.flatMap(decodeTokens)
  )

  /** Records who minted a token just issued (`mintedBy`: the minter's hash; none when a person issued it). */
  const record = (tokenHash: string, userId: string, mintedBy: string | undefined, now: number) =>
    sql`INSERT INTO token_lineage ${sql.insert({ token_hash: tokenHash, user_id: userId, minted_by: mintedBy ?? null, created_at: now })}`

  /** Live tokens of one user (or everyone), oldest first, with their minter's id and how many live tokens descend from each. */
  const list = Effect.fn("TokenLineage.list")(function*(userId?: string) {
    const live = yield* liveTokens
    const kids = yield* children
    const parents = new Map<string, string>()
    for (const [parent, hashes] of kids) for (const h of hashes) parents.set(h, parent)
    const liveHashes = new Set(live.map((t) => t.token_hash))
    return live.filter((t) => userId === undefined || t.user_id === userId).map((t): MintedTokenInfo => {
      const minter = parents.get(t.token_hash)
      let minted = 0
      for (const d of descendantsOf(t.token_hash, kids)) if (liveHashes.has(d)) minted++
      return { ...toTokenInfo(t), mintedBy: minter === undefined ? null : tokenId(minter), minted }
    })
  })

  /** The one token (live, else revoked but known by its lineage) whose hash starts with `prefix`. */
  const resolve = (prefix: string, display: string, owner: string | undefined) =>
    Effect.gen(function*() {
      const live = (yield* liveTokens).filter((t) => t.token_hash.startsWith(prefix) && (owner === undefined || t.user_id === owner))
      const [only, ...more] = live
      if (only !== undefined && more.length === 0) return { hash: only.token_hash, live: Option.some(only) }
      if (more.length > 0) return yield* new AccountError({ reason: `token id "${display}" matches ${live.length} tokens; give more of it` })
      // A revoked token: its own lineage row says whose it was; a minter without one (issued before
      // the lineage) is known only by its hash, so only an operator (no owner) may name it.
      const own = yield* sql`SELECT token_hash, user_id FROM token_lineage
        WHERE substr(token_hash, 1, ${prefix.length}) = ${prefix}
          AND token_hash NOT IN (SELECT token_hash FROM user_tokens)`.pipe(Effect.flatMap(decodeRevoked))
      const minters = owner !== undefined ? [] : yield* sql`SELECT DISTINCT minted_by AS token_hash, '' AS user_id FROM token_lineage
        WHERE substr(minted_by, 1, ${prefix.length}) = ${prefix}
          AND minted_by NOT IN (SELECT token_hash FROM user_tokens)`.pipe(Effect.flatMap(decodeRevoked))
      const known = [...new Set([...own.filter((r) => owner === undefined || r.user_id === owner), ...minters].map((r) => r.token_hash))]
      if (known.length > 1) return yield* new AccountError({ reason: `token id "${display}" matches ${known.length} tokens; give more of it` })
      const revoked = known[0]
      if (revoked === undefined) return yield* new AccountError({ reason: `no token "${display}" (see: anna user token list)` })
      return { hash: revoked, live: Option.none<typeof TokenRow.Type>() }
    })

  /**
   * Revokes the token whose id starts with `tokenId` (of `owner` only, when given) and, with
   * `cascade`, every live token it minted, directly or not. A token revoked before may be named with
   * `cascade` (its minted tokens go). Without `cascade`, says how many minted tokens remain.
   */
  const revoke = Effect.fn("TokenLineage.revoke")(function*(tokenIdPrefix: string, options: { readonly cascade: boolean; readonly owner?: string | undefined }) {
    const prefix = tokenIdPrefix.trim().toLowerCase()
    if (!/^[0-9a-f]{4,64}$/.test(prefix)) {
      return yield* new AccountError({ reason: `"${tokenIdPrefix}" is not a token id (see: anna user token list)` })
    }
    return yield* immediate(Effect.gen(function*() {
      const root = yield* resolve(prefix, tokenIdPrefix, options.owner)
      const kids = yield* children
      const below = descendantsOf(root.hash, kids)
      const minted = (yield* liveTokens).filter((t) => below.has(t.token_hash))
      if (Option.isNone(root.live) && !options.cascade) {
        return yield* new AccountError({
          reason: `token ${tokenId(root.hash)} is revoked already${
            minted.length === 0 ? "" : `; ${minted.length} token${minted.length === 1 ? "" : "s"} it minted still work (revoke it with cascade to revoke them)`
          }`
        })
      }
      const gone = [...(Option.isSome(root.live) ? [root.hash] : []), ...(options.cascade ? minted.map((t) => t.token_hash) : [])]
      for (const hash of gone) yield* sql`DELETE FROM user_tokens WHERE token_hash = ${hash}`
      const result: RevokedTokens = {
        revoked: Option.match(root.live, { onNone: () => null, onSome: toTokenInfo }),
        cascaded: options.cascade ? minted.map(toTokenInfo) : [],
        remainingMinted: options.cascade ? 0 : minted.length
      }
      return result
    }))
  })

  return { record, list, revoke }
}
