/**
 * ChannelLedger — what makes a chat platform's delivery exactly-once (issue 12). Platforms deliver
 * an inbound message at least once; a channel `claim`s each by the platform's id for it before it
 * acts, so a redelivery (a reconnect, a restart before the platform saw the confirmation) is
 * dropped. The reply's platform message ids are recorded as they are sent, and the message is
 * marked answered when the whole reply is out; after a crash, `open` lists what was claimed but not
 * answered, with the ids already written into, so the channel finishes those replies by editing
 * them instead of sending a second one. `cursor` is where a platform's inbound stream resumes.
 *
 * Owns: the `channel_inbound` and `channel_cursors` tables (migrations/0012_channel_delivery.sql). Not: users, chats,
 * sessions (ConfigStore, Runtime).
 *
 * Layers: `SqliteChannelLedger.layer` (src/layers/channels/SqliteChannelLedger.ts).
 */
import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "../domain/storage/errors.ts"

export interface OpenInbound {
  readonly key: string
  /** What the channel stored with its claim (the platform's message, as JSON text). */
  readonly payload: string
  /** Platform ids of the messages the reply was written into so far. */
  readonly reply: ReadonlyArray<string>
  readonly receivedAt: number
}

export class ChannelLedger extends Context.Service<ChannelLedger, {
  /** Records an inbound message; true the first time, false for every later delivery of it. */
  readonly claim: (channel: string, key: string, payload: string) => Effect.Effect<boolean, StorageError>
  /** The platform ids of the messages the reply to `key` is written into (replaces the list). */
  readonly recordReply: (channel: string, key: string, reply: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
  /** The whole reply to `key` was delivered. */
  readonly answered: (channel: string, key: string) => Effect.Effect<void, StorageError>
  /** Claimed since `since` (ms) and never answered, oldest first. */
  readonly open: (channel: string, since: number) => Effect.Effect<ReadonlyArray<OpenInbound>, StorageError>
  readonly cursor: (channel: string) => Effect.Effect<Option.Option<string>, StorageError>
  readonly setCursor: (channel: string, cursor: string) => Effect.Effect<void, StorageError>
  /** Forgets answered messages received before `before` (ms); returns how many. */
  readonly prune: (channel: string, before: number) => Effect.Effect<number, StorageError>
}>()("anna/ChannelLedger") {}
