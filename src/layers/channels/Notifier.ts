/**
 * The notification dispatcher over the gateway's running channels (services/Notifier.ts): picks the
 * channel (domain/channels/notify.ts `pickChannel`), keeps each user under NOTIFY_LIMIT
 * notifications per NOTIFY_WINDOW_MS (a sliding window on Effect's Clock), and delivers through
 * Channels.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { ChannelError } from "../../domain/channels/errors.ts"
import { canPush, pickChannel } from "../../domain/channels/notify.ts"
import { Channels } from "../../services/Channels.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Notifier } from "../../services/Notifier.ts"

/** Notifications one user may get per window. */
export const NOTIFY_LIMIT = 10
export const NOTIFY_WINDOW_MS = 60_000

const refused = (reason: string) => new ChannelError({ channel: "notify", reason })

export const make = Effect.gen(function*() {
  const channels = yield* Channels
  const config = yield* ConfigStore
  /** Per user: when their recent notifications went out (ms), oldest first. */
  const sent = new Map<string, Array<number>>()

  const running = Effect.map(channels.status, (all) => all.filter((c) => c.state === "running" && canPush(c.id)).map((c) => c.id))

  /** Takes a slot in the user's window, or fails saying when one frees up. */
  const admit = (userId: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const recent = (sent.get(userId) ?? []).filter((t) => t > now - NOTIFY_WINDOW_MS)
      if (recent.length >= NOTIFY_LIMIT) {
        sent.set(userId, recent)
        const wait = Math.ceil(((recent[0] ?? now) + NOTIFY_WINDOW_MS - now) / 1000)
        return yield* refused(`user ${userId} got ${NOTIFY_LIMIT} notifications in the last minute; the next can go in ${wait} s`)
      }
      recent.push(now)
      sent.set(userId, recent)
    })

  const notify = Effect.fn("Notifier.notify")(function*(userId: string, message: Parameters<Notifier["Service"]["notify"]>[1], options?: { readonly channel?: string | undefined }) {
    const user = yield* config.getUser(userId).pipe(Effect.mapError((e) => refused(e.message)))
    if (Option.isNone(user)) return yield* refused(`no user "${userId}"`)
    const picked = pickChannel(user.value, yield* running, options?.channel)
    if ("problem" in picked) return yield* refused(picked.problem)
    yield* admit(userId)
    yield* channels.notify(picked.channel, { userId }, message)
    return picked.channel
  })

  return Notifier.of({ notify, channels: running })
})

export const layer = Layer.effect(Notifier, make)
