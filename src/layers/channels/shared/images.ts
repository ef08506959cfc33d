/**
 * Images users send, as the model takes them (issue 12, shared): downloaded with a size cap and a
 * time limit (a hostile sender can point at anything: the answer is read as a stream and cut at the
 * cap, never buffered whole first), recognised by their bytes (PNG, JPEG, GIF, WebP: what the model
 * APIs accept; anything else is refused whatever the platform says it is), and given as a base64
 * image block next to the message's text.
 */
import type { Effect } from "effect"
import type { ContentBlock, ImageBlock } from "../../../domain/message.ts"
import type { UserMessage } from "../../../domain/runtime/types.ts"
import { sniffImage } from "../../../domain/channels/images.ts"
import { kindOfStatus, networkError, PlatformCallError, platformCall } from "./calls.ts"

// Where the sniffing lives now (the web console uses it too); the channels import it from here.
export { sniffImage }

/** The largest image passed to the model (the providers refuse larger ones anyway). */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024
/** How long one download may take. */
export const IMAGE_TIMEOUT_MS = 30_000

/** These bytes as an image block, or why not. */
export const imageBlock = (bytes: Uint8Array): ImageBlock | string => {
  if (bytes.length > MAX_IMAGE_BYTES) return `the image is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`
  const mediaType = sniffImage(bytes)
  if (mediaType === undefined) return "the file is not a PNG, JPEG, GIF or WebP image"
  return { type: "image", source: { type: "base64", media_type: mediaType, data: Buffer.from(bytes).toString("base64") } }
}

/** Reads a response body up to `max` bytes; more is an error (the rest is not read). */
const readCapped = async (response: Response, max: number): Promise<Uint8Array> => {
  const declared = Number(response.headers.get("content-length") ?? "")
  if (Number.isFinite(declared) && declared > max) throw new TooLarge()
  const reader = response.body?.getReader()
  if (reader === undefined) return new Uint8Array()
  const chunks: Array<Uint8Array> = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > max) {
      await reader.cancel()
      throw new TooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

class TooLarge extends Error {}

/**
 * GETs `url` (with `headers`), at most `maxBytes`, within IMAGE_TIMEOUT_MS; 429/5xx/network
 * failures retried like any platform call. The bytes, or a refusal that says why.
 */
export const download = (
  platform: string,
  url: string,
  options: { readonly headers?: Readonly<Record<string, string>> | undefined; readonly maxBytes?: number | undefined } = {}
): Effect.Effect<Uint8Array, PlatformCallError> => {
  const max = options.maxBytes ?? MAX_IMAGE_BYTES
  const refused = (description: string, status?: number) =>
    new PlatformCallError({ platform, method: "download", kind: "refused", status, description, retryAfterMs: undefined })
  return platformCall(platform, "download", async (signal) => {
    const response = await fetch(url, {
      headers: { ...options.headers },
      signal: AbortSignal.any([signal, AbortSignal.timeout(IMAGE_TIMEOUT_MS)]),
      redirect: "follow"
    })
    if (!response.ok) {
      await response.body?.cancel()
      throw new PlatformCallError({
        platform,
        method: "download",
        kind: kindOfStatus(response.status),
        status: response.status,
        description: `HTTP ${response.status}`,
        retryAfterMs: undefined
      })
    }
    return await readCapped(response, max)
  }, (_method, e) =>
    e instanceof PlatformCallError
      ? e
      : e instanceof TooLarge
      ? refused(`larger than ${max} bytes`)
      : networkError(platform, "download", e))
}

/** A user message of `text` and images: a plain string when there are no images. */
export const withImages = (text: string, images: ReadonlyArray<ImageBlock>, refusals: ReadonlyArray<string> = []): UserMessage => {
  const notes = refusals.map((r) => `[an image could not be read: ${r}]`)
  const fullText = [text, ...notes].filter((t) => t !== "").join("\n")
  if (images.length === 0) return fullText
  const blocks: Array<ContentBlock> = [...images]
  blocks.push({ type: "text", text: fullText === "" ? "(an image)" : fullText })
  return blocks
}
