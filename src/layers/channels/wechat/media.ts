/**
 * Images on WeChat (issue 12), both ways. In: iLink puts them on its CDN encrypted with
 * AES-128-ECB (PKCS#7 padding); the message carries the download reference (`full_url`, or
 * `encrypt_query_param` for `<cdn_base_url>/download?encrypted_query_param=…`) and the key
 * (`image_item.aeskey` as 32 hex digits, or `media.aes_key` as base64 of the 16 bytes or of their
 * 32 hex digits). The bytes are downloaded with the shared image download (size cap, time limit,
 * retries: shared/images.ts), decrypted, and passed on only when they are an image the models read.
 *
 * Out (`uploadImage`): a fresh AES-128 key encrypts the picture (ECB, PKCS#7); `getuploadurl` is
 * told its file key, sizes (plain and encrypted), MD5 and the key as hex and answers where to POST
 * it (`upload_full_url`, or `upload_param` for `<cdn_base_url>/upload?encrypted_query_param=…&filekey=…`);
 * the CDN answers the upload with the picture's download parameter in the `x-encrypted-param`
 * header (a 4xx carries its reason in `x-error-message`). The message's image item then names that
 * parameter and the key as base64 of its 32 hex digits (what iLink's own client sends).
 */
import { Effect } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import type { ImageBlock } from "../../../domain/message.ts"
import { kindOfStatus, networkError, PlatformCallError, platformCall, retryAfterHeader } from "../shared/calls.ts"
import { download, imageBlock, MAX_IMAGE_BYTES } from "../shared/images.ts"
import { botCall, type Endpoint, GetUploadUrlResponse, type ImageItem, PLATFORM, readCapped } from "./api.ts"

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

// --- Out ---

/** iLink's media type of an image in `getuploadurl`. */
const UPLOAD_MEDIA_IMAGE = 1
/** How long one upload to the CDN may take. */
const UPLOAD_TIMEOUT_MS = 60_000
/** The most of a CDN error answer that is read (for its reason). */
const MAX_ERROR_BYTES = 16 * 1024

/** AES-128-ECB with PKCS#7 padding (what iLink's CDN stores). */
export const encryptEcb = (data: Uint8Array, key: Buffer): Buffer => {
  const cipher = createCipheriv("aes-128-ecb", key, null)
  return Buffer.concat([cipher.update(data), cipher.final()])
}

/** What a message's image item needs of an uploaded picture. */
export interface UploadedImage {
  readonly media: { readonly encrypt_query_param: string; readonly aes_key: string; readonly encrypt_type: 1 }
  /** The encrypted size. */
  readonly mid_size: number
}

const uploadRefused = (description: string, status?: number) =>
  new PlatformCallError({ platform: PLATFORM, method: "cdn_upload", kind: "refused", status, description, retryAfterMs: undefined })

/** POSTs the encrypted bytes to the CDN; the download parameter it answers with. 429/5xx/network: retried. */
const postToCdn = (url: string, encrypted: Buffer): Effect.Effect<string, PlatformCallError> =>
  platformCall(PLATFORM, "cdn_upload", async (signal) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream" },
      body: new Uint8Array(encrypted),
      signal: AbortSignal.any([signal, AbortSignal.timeout(UPLOAD_TIMEOUT_MS)])
    })
    const body = await readCapped(res, MAX_ERROR_BYTES, "the CDN's answer").then(
      (b) => Buffer.from(b).toString("utf8").trim().slice(0, 200),
      () => ""
    )
    if (res.status !== 200) {
      const reason = res.headers.get("x-error-message")?.slice(0, 200) || body || `HTTP ${res.status}`
      throw new PlatformCallError({
        platform: PLATFORM,
        method: "cdn_upload",
        kind: kindOfStatus(res.status),
        status: res.status,
        description: `the CDN refused the picture: ${reason}`,
        retryAfterMs: retryAfterHeader(res.headers, Date.now())
      })
    }
    const param = res.headers.get("x-encrypted-param")
    if (param === null || param.trim() === "") throw uploadRefused("the CDN took the picture but gave no download parameter (x-encrypted-param)")
    return param.trim()
  }, (method, e) => (e instanceof PlatformCallError ? e : networkError(PLATFORM, method, e)))

/**
 * Puts a picture for WeChat user `to` on iLink's CDN, encrypted under a fresh key: what an image
 * item needs to show it; or a failure saying why (too large, refused by `getuploadurl` or the CDN,
 * still failing after the retries).
 */
export const uploadImage = (
  endpoint: Endpoint,
  cdnBaseUrl: string,
  to: string,
  bytes: Uint8Array
): Effect.Effect<UploadedImage, PlatformCallError> =>
  Effect.gen(function*() {
    if (bytes.length > MAX_IMAGE_BYTES) {
      return yield* uploadRefused(`the picture is ${(bytes.length / 1024 / 1024).toFixed(1)} MiB; WeChat takes at most ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`)
    }
    if (bytes.length === 0) return yield* uploadRefused("the picture is empty")
    const key = randomBytes(16)
    const filekey = randomBytes(16).toString("hex")
    const encrypted = encryptEcb(bytes, key)
    const answer = yield* botCall(endpoint, "getuploadurl", {
      filekey,
      media_type: UPLOAD_MEDIA_IMAGE,
      to_user_id: to,
      rawsize: bytes.length,
      rawfilemd5: createHash("md5").update(bytes).digest("hex"),
      filesize: encrypted.length,
      no_need_thumb: true,
      aeskey: key.toString("hex")
    }, GetUploadUrlResponse)
    const full = answer.upload_full_url?.trim()
    const url = full !== undefined && /^https?:\/\//i.test(full)
      ? full
      : answer.upload_param !== undefined && answer.upload_param !== ""
      ? `${cdnBaseUrl.replace(/\/+$/, "")}/upload?encrypted_query_param=${encodeURIComponent(answer.upload_param)}&filekey=${encodeURIComponent(filekey)}`
      : undefined
    if (url === undefined) return yield* uploadRefused("getuploadurl gave no upload address")
    const param = yield* postToCdn(url, encrypted)
    return {
      media: { encrypt_query_param: param, aes_key: Buffer.from(key.toString("hex")).toString("base64"), encrypt_type: 1 },
      mid_size: encrypted.length
    }
  })
