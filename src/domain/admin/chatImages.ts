/**
 * Images in the web chat (`POST /api/chat` `images`): inline `data:` URLs, as the HTTP channel takes
 * them, checked the same way by the console before it sends (so a user hears why at once) and by the
 * gateway (which trusts nothing the browser says). Pure, and free of node: modules: the console's
 * bundle imports it.
 *
 * The limits are the HTTP channel's for inline images: a request body of at most 10 MiB and a message
 * of at most 8 MiB as memory keeps it (MAX_MESSAGE_BYTES: about 6 MiB of images, base64 taking a third
 * more), both 413; at most MAX_CHAT_IMAGES per message (as many as the HTTP channel fetches from URLs);
 * PNG, JPEG, GIF or WebP by their bytes, whatever the URL says.
 */
import { IMAGE_MEDIA_TYPES, sniffImage } from "../channels/images.ts"
import { MAX_MESSAGE_BYTES } from "../memory/types.ts"

/** Images one chat message may carry. */
export const MAX_CHAT_IMAGES = 8
/** The chat's largest request body, as the HTTP channel's (`MAX_BODY_BYTES`): images come inline. */
export const MAX_CHAT_BODY_BYTES = 10 * 1024 * 1024
/** The message as memory keeps it (the images' base64 and the text) may not pass this. */
export const MAX_CHAT_MESSAGE_BYTES = MAX_MESSAGE_BYTES

/** An image of a chat message: its type (from its bytes) and its bytes in base64. */
export interface ChatImage {
  readonly mediaType: string
  readonly data: string
}

const DATA_URL = /^data:([a-z]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i

/** Bytes the base64 `data` decodes to. */
export const decodedBytes = (data: string): number => Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0)

/** The first bytes of base64 `data` (enough to tell an image's type). */
const head = (data: string): Uint8Array => {
  const text = atob(data.slice(0, 16))
  return Uint8Array.from(text, (c) => c.charCodeAt(0))
}

/** A `data:` URL as a chat image, or why it is not one. */
export const parseImageDataUrl = (url: string): ChatImage | string => {
  const m = DATA_URL.exec(url)
  if (m === null) return "not a base64 data: URL (data:image/png;base64,…)"
  const data = m[2] ?? ""
  if (data.length % 4 !== 0 || data.length === 0) return "its base64 is cut short"
  const mediaType = sniffImage(head(data))
  if (mediaType === undefined) return "not a PNG, JPEG, GIF or WebP image"
  return { mediaType, data }
}

/** Whether a stored image block is one the console may show (a type it checked, base64 it can put in an <img>). */
export const showableImage = (mediaType: string, data: string): boolean =>
  IMAGE_MEDIA_TYPES.includes(mediaType) && /^[A-Za-z0-9+/]*={0,2}$/.test(data)

/**
 * About the bytes memory would keep for a message of `text` and these images (their base64 and the
 * JSON around each): what the console checks before sending; the gateway measures exactly.
 */
export const estimatedMessageBytes = (text: string, images: ReadonlyArray<ChatImage>): number =>
  images.reduce((n, i) => n + i.data.length + i.mediaType.length + 64, 0) + new TextEncoder().encode(text).length + 32

/** MiB, for people. */
export const mib = (bytes: number): string => (bytes / 1048576).toFixed(1)
