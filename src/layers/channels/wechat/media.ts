/**
 * Images sent to the bot on WeChat (issue 12): iLink puts them on its CDN encrypted with
 * AES-128-ECB (PKCS#7 padding); the message carries the download reference (`full_url`, or
 * `encrypt_query_param` for `<cdn_base_url>/download?encrypted_query_param=…`) and the key
 * (`image_item.aeskey` as 32 hex digits, or `media.aes_key` as base64 of the 16 bytes or of their
 * 32 hex digits). The bytes are downloaded with the shared image download (size cap, time limit,
 * retries: shared/images.ts), decrypted, and passed on only when they are an image the models read.
 */
import { Effect } from "effect"
import { createDecipheriv } from "node:crypto"
import type { ImageBlock } from "../../../domain/message.ts"
import { PlatformCallError } from "../shared/calls.ts"
import { download, imageBlock, MAX_IMAGE_BYTES } from "../shared/images.ts"
import { type ImageItem, PLATFORM } from "./api.ts"

/** The 16-byte key of an image, or undefined when the message carries none that is well formed. */
export const imageKey = (item: ImageItem): Buffer | undefined => {
  if (item.aeskey !== undefined && /^[0-9a-f]{32}$/i.test(item.aeskey)) return Buffer.from(item.aeskey, "hex")
  const b64 = item.media?.aes_key
  if (b64 === undefined || !/^[A-Za-z0-9+/=_-]+$/.test(b64)) return undefined
  const raw = Buffer.from(b64, "base64")
  if (raw.length === 16) return raw
  const hex = raw.toString("latin1")
  return raw.length === 32 && /^[0-9a-f]{32}$/i.test(hex) ? Buffer.from(hex, "hex") : undefined
}

/** Where the encrypted image is: the CDN's own URL, or one built from the query parameter. */
export const imageUrl = (item: ImageItem, cdnBaseUrl: string): string | undefined => {
  const media = item.media
  if (media?.full_url !== undefined && /^https?:\/\//i.test(media.full_url)) return media.full_url
  if (media?.encrypt_query_param === undefined || media.encrypt_query_param === "") return undefined
  return `${cdnBaseUrl.replace(/\/+$/, "")}/download?encrypted_query_param=${encodeURIComponent(media.encrypt_query_param)}`
}

/** AES-128-ECB with PKCS#7 padding, undone; undefined when the bytes or the padding are wrong. */
export const decryptEcb = (data: Uint8Array, key: Buffer): Buffer | undefined => {
  try {
    const decipher = createDecipheriv("aes-128-ecb", key, null)
    return Buffer.concat([decipher.update(data), decipher.final()])
  } catch {
    return undefined
  }
}

const refused = (description: string) =>
  new PlatformCallError({ platform: PLATFORM, method: "download", kind: "refused", status: undefined, description, retryAfterMs: undefined })

/**
 * The image of `item` as an image block, or a failure saying why it cannot be shown to the model
 * (`refused`: no key, too big, not decryptable, not an image; a download failing after retries).
 */
export const downloadImage = (item: ImageItem, cdnBaseUrl: string): Effect.Effect<ImageBlock, PlatformCallError> => {
  const key = imageKey(item)
  const url = imageUrl(item, cdnBaseUrl)
  if (key === undefined) return Effect.fail(refused("the image has no usable AES key"))
  if (url === undefined) return Effect.fail(refused("the image has no download address"))
  // The ciphertext is the plaintext padded to a whole block: at most 16 bytes more.
  return download(PLATFORM, url, { maxBytes: MAX_IMAGE_BYTES + 16 }).pipe(
    Effect.flatMap((encrypted) => {
      const plain = decryptEcb(encrypted, key)
      if (plain === undefined) return Effect.fail(refused("the image could not be decrypted with its key"))
      const block = imageBlock(plain)
      return typeof block === "string" ? Effect.fail(refused(block)) : Effect.succeed(block)
    })
  )
}
