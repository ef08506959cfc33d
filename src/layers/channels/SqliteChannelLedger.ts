/**
 * ChannelLedger on SQLite (migrations/0012_channel_delivery.sql). A claim is one INSERT … ON CONFLICT
 * DO NOTHING, so two deliveries racing each other still give exactly one `true`.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { storageError } from "../sql/errors.ts"
import { ChannelLedger } from "../../services/ChannelLedger.ts"

const parseReply = (text: string): ReadonlyArray<string> => {
  try {
    const v: unknown = JSON.parse(text)
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []
  } catch {
    return []
  }
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient

  const claim = Effect.fn("ChannelLedger.claim")(function*(channel: string, key: string, payload: string) {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql<{ key: string }>`INSERT INTO channel_inbound (channel, message_key, payload, received_at)
      VALUES (${channel}, ${key}, ${payload}, ${now}) ON CONFLICT (channel, message_key) DO NOTHING RETURNING message_key AS key`
    return rows.length === 1
  }, Effect.mapError(storageError("claim an inbound message")))

  const recordReply = Effect.fn("ChannelLedger.recordReply")(function*(channel: string, key: string, reply: ReadonlyArray<string>) {
    yield* sql`UPDATE channel_inbound SET reply = ${JSON.stringify(reply)} WHERE channel = ${channel} AND message_key = ${key}`
  }, Effect.mapError(storageError("record a reply")))

  const answered = Effect.fn("ChannelLedger.answered")(function*(channel: string, key: string) {
    const now = yield* Clock.currentTimeMillis
    yield* sql`UPDATE channel_inbound SET answered_at = ${now} WHERE channel = ${channel} AND message_key = ${key} AND answered_at IS NULL`
  }, Effect.mapError(storageError("mark a message answered")))

  const open = Effect.fn("ChannelLedger.open")(function*(channel: string, since: number) {
    const rows = yield* sql<{ key: string; payload: string; reply: string; received_at: number }>`SELECT message_key AS key, payload,
        reply, received_at FROM channel_inbound
      WHERE channel = ${channel} AND answered_at IS NULL AND received_at >= ${since} ORDER BY received_at, message_key`
    return rows.map((r) => ({ key: r.key, payload: r.payload, reply: parseReply(r.reply), receivedAt: r.received_at }))
  }, Effect.mapError(storageError("list unanswered messages")))

  const cursor = Effect.fn("ChannelLedger.cursor")(function*(channel: string) {
    const rows = yield* sql<{ cursor: string }>`SELECT cursor FROM channel_cursors WHERE channel = ${channel}`
    return Option.fromNullishOr(rows[0]?.cursor)
  }, Effect.mapError(storageError("read a channel cursor")))

  const setCursor = Effect.fn("ChannelLedger.setCursor")(function*(channel: string, value: string) {
    const now = yield* Clock.currentTimeMillis
    yield* sql`INSERT INTO channel_cursors (channel, cursor, updated_at) VALUES (${channel}, ${value}, ${now})
      ON CONFLICT (channel) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`
  }, Effect.mapError(storageError("save a channel cursor")))

  const prune = Effect.fn("ChannelLedger.prune")(function*(channel: string, before: number) {
    const rows = yield* sql<{ key: string }>`DELETE FROM channel_inbound
      WHERE channel = ${channel} AND answered_at IS NOT NULL AND received_at < ${before} RETURNING message_key AS key`
    return rows.length
  }, Effect.mapError(storageError("prune answered messages")))

  return ChannelLedger.of({ claim, recordReply, answered, open, cursor, setCursor, prune })
})

export const layer = Layer.effect(ChannelLedger, make)
