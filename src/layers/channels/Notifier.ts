/**
 * The notification dispatcher over the gateway's running channels (services/Notifier.ts): picks the
 * channel (domain/channels/notify.ts `pickChannel`), keeps each user under NOTIFY_LIMIT
 * notifications per NOTIFY_WINDOW_MS (a sliding window on Effect's Clock, counted in the database:
 * notifyLimit.ts), and delivers through Channels.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ChannelError } from "../../domain/channels/errors.ts"
import { canPush, pickChannel } from "../../domain/channels/notify.ts"
import { Channels } from "../../services/Channels.ts"
import { ConfigStore } from "../../services/ConfigStore.ts"
import { Notifier } from "../../services/Notifier.ts"
import * as NotifyLimit from "./notifyLimit.ts"

/** Notifications one user may get per window. */
export const NOTIFY_LIMIT = 10
export const NOTIFY_WINDOW_MS = 60_000

const refused = (reason: string) => new ChannelError({ channel: "notify", reason })

export const make = Effect.gen(function*() {
  const channels = yield* Channels
  const config = yield* ConfigStore
  const slots = NotifyLimit.make(yield* SqlClient.SqlClient, NOTIFY_LIMIT, NOTIFY_WINDOW_MS)

  const running = Effect.map(channels.status, (all) => all.filter((c) => c.state === "running" && canPush(c.id)).map((c) => c.id))

  /** Takes a slot in the user's window, or fails saying when one frees up. */
  const admit = (userId: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const waitMs = yield* slots.take(userId, now).pipe(
        Effect.mapError((e) => refused(`the notification limit could not be checked: ${e.message}`))
      )
      if (waitMs > 0) {
        return yield* refused(
          `user ${userId} got ${NOTIFY_LIMIT} notifications in the last minute; the next can go in ${Math.ceil(waitMs / 1000)} s`
        )
      }
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
