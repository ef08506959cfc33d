/**
 * Image URLs in `/v1/chat/completions` (issue 23). Passed on unchanged, an `http(s)` image URL is
 * fetched by whatever the provider is — for a self-hosted model server, a machine inside the
 * operator's network, which makes it an SSRF point any API user can aim. So anna never passes a URL on:
 *
 * - `http.fetch_image_urls=off` (the default): a non-`data:` image is a 400 that says to send the
 *   image inline, and nothing is fetched;
 * - `on`: anna fetches it itself through webfetch's guarded GET (every address checked at connect
 *   time and on each redirect: no loopback, private, link-local or metadata address, unless
 *   `http.image_url_hosts` names the host; metadata never), at most MAX_IMAGE_URLS per message, each
 *   within IMAGE_FETCH_TIMEOUT and MAX_IMAGE_BYTES, recognised by its bytes (PNG, JPEG, GIF, WebP —
 *   channels/shared/images.ts, as every channel does), and passes the bytes on as base64.
 *
 * The settings are read only when a message has an image URL, at each such request (a change
 * applies at once).
 */
import { Duration, Effect } from "effect"
import { sizeProblem } from "../../../domain/memory/storedSize.ts"
import type { ContentBlock } from "../../../domain/message.ts"
import type { UserMessage } from "../../../domain/runtime/types.ts"
import type { FetchPolicy } from "../../../domain/webfetch/address.ts"
import { formatCount } from "../../../domain/text.ts"
import { guardedGet, type Resolver, systemResolver } from "../../webfetch/guardedGet.ts"
import { imageBlock, MAX_IMAGE_BYTES } from "../shared/images.ts"
import { ApiError } from "./openaiWire.ts"

/** One image URL's whole fetch, redirects included. */
export const IMAGE_FETCH_TIMEOUT = Duration.seconds(15)
export const IMAGE_MAX_REDIRECTS = 3
/** Image URLs fetched for one message; more is a 400 (each can take the whole timeout). */
export const MAX_IMAGE_URLS = 8

export const FETCH_SETTING = "http.fetch_image_urls"
export const HOSTS_SETTING = "http.image_url_hosts"

/** What the settings allow: whether to fetch, and the guard's policy. */
export interface ImageUrlPolicy {
  readonly fetch: boolean
  readonly policy: FetchPolicy
}

/** The policy of the two settings' values (already checked; see domain/config/settings.ts). */
export const imageUrlPolicy = (fetch: string, hosts: string): ImageUrlPolicy => ({
  fetch: fetch === "on",
  policy: {
    allowPrivate: false,
    allowHosts: hosts.split(",").map((h) => h.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")).filter((h) => h !== "")
  }
})

const NOT_FETCHED = "Image URLs are not fetched by this gateway: send the image inline as a base64 data URL " +
  `(data:image/png;base64,...), or ask its operator to allow fetching (anna settings set ${FETCH_SETTING} on).`

const sizeText = (n: number) => `${formatCount(Math.round(n / 1024 / 1024))} MiB`

/** One URL's image as a base64 block, or a 400 that says why not. */
const fetchOne = (url: string, p: ImageUrlPolicy, resolver: Resolver) =>
  Effect.gen(function*() {
    const relaxed: Array<readonly [string, string]> = []
    const body = yield* guardedGet(url, {
      policy: p.policy,
      resolver,
      // One byte more than allowed: a body cut there was too large.
      maxBytes: MAX_IMAGE_BYTES + 1,
      maxRedirects: IMAGE_MAX_REDIRECTS,
      readBinary: true,
      accept: "image/png,image/jpeg,image/gif,image/webp;q=0.9,*/*;q=0.1",
      onRelaxed: (at, address) => relaxed.push([at, address])
    }).pipe(
      Effect.timeoutOrElse({
        duration: IMAGE_FETCH_TIMEOUT,
        orElse: () => Effect.fail(ApiError.invalidImageUrl(`no complete answer from ${url} within ${Duration.format(IMAGE_FETCH_TIMEOUT)}`))
      }),
      Effect.mapError((e) => (e._tag === "ApiError" ? e : ApiError.invalidImageUrl(e.message))),
      Effect.ensuring(Effect.suspend(() =>
        Effect.forEach(relaxed, ([at, address]) =>
          Effect.logWarning(`HTTP channel: an image URL reached a non-public address, allowed by ${HOSTS_SETTING}`).pipe(
            Effect.annotateLogs({ url: at, address })
          ), { discard: true })
      ))
    )
    if (body.status < 200 || body.status >= 300) return yield* ApiError.invalidImageUrl(`could not fetch ${url}: HTTP ${body.status}`)
    if (body.truncated) return yield* ApiError.invalidImageUrl(`the image at ${url} is larger than ${sizeText(MAX_IMAGE_BYTES)}`)
    const block = imageBlock(body.bytes)
    if (typeof block === "string") return yield* ApiError.invalidImageUrl(`${url}: ${block}`)
    return block
  })

/**
 * `message` with every URL image replaced by the fetched image's bytes, or refused (see the header).
 * `settings` reads the two settings; it is not called when no image is a URL.
 */
export const resolveImageUrls = (
  message: UserMessage,
  settings: Effect.Effect<ImageUrlPolicy, ApiError>,
  resolver: Resolver = systemResolver
): Effect.Effect<UserMessage, ApiError> =>
  Effect.gen(function*() {
    if (typeof message === "string") return message
    const urls = message.filter((b) => b.type === "image" && b.source.type === "url").length
    if (urls === 0) return message
    const p = yield* settings
    if (!p.fetch) return yield* ApiError.invalidImageUrl(NOT_FETCHED)
    if (urls > MAX_IMAGE_URLS) return yield* ApiError.invalidImageUrl(`at most ${MAX_IMAGE_URLS} image URLs per message (this one has ${urls})`)
    const blocks: Array<ContentBlock> = []
    for (const b of message) {
      blocks.push(b.type === "image" && b.source.type === "url" ? yield* fetchOne(b.source.url, p, resolver) : b)
    }
    // The images' bytes may take the message past what memory keeps: a 413, as for an inline one.
    const problem = sizeProblem(blocks)
    return problem === undefined ? blocks : yield* ApiError.messageTooLarge(problem)
  })
