/**
 * Files of the fake Bot API: photos users send and photos the bot uploads, each stored once and
 * offered as Telegram's PhotoSize variants (90, 320, 800, 1280 px thumbnails and the full size).
 * The fake does not resize: every variant downloads the original bytes, and its file_size is their
 * length. Image dimensions are read from the PNG, JPEG, GIF or WebP header.
 */
import type { File, PhotoSize } from "grammy/types"
import { badRequest } from "./wire.ts"

export interface StoredFile {
  readonly fileId: string
  readonly fileUniqueId: string
  readonly filePath: string
  readonly mime: string
  readonly bytes: Uint8Array
}

export interface ImageInfo {
  readonly mime: string
  readonly extension: string
  readonly width: number
  readonly height: number
}

const u16be = (b: Uint8Array, at: number) => ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0)
const u16le = (b: Uint8Array, at: number) => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8)
const u24le = (b: Uint8Array, at: number) => u16le(b, at) | ((b[at + 2] ?? 0) << 16)
const u32be = (b: Uint8Array, at: number) => u16be(b, at) * 65536 + u16be(b, at + 2)
const ascii = (b: Uint8Array, at: number, length: number) => Buffer.from(b.subarray(at, at + length)).toString("latin1")

/** Format and size of an image, from its header; undefined if it is none the fake knows. */
export const sniffImage = (b: Uint8Array): ImageInfo | undefined => {
  if (b.length >= 24 && ascii(b, 1, 3) === "PNG" && ascii(b, 12, 4) === "IHDR") {
    return { mime: "image/png", extension: "png", width: u32be(b, 16), height: u32be(b, 20) }
  }
  if (b.length >= 10 && ascii(b, 0, 4) === "GIF8") {
    return { mime: "image/gif", extension: "gif", width: u16le(b, 6), height: u16le(b, 8) }
  }
  if (b.length >= 30 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") {
    const chunk = ascii(b, 12, 4)
    const webp = (width: number, height: number): ImageInfo => ({ mime: "image/webp", extension: "webp", width, height })
    if (chunk === "VP8X") return webp(u24le(b, 24) + 1, u24le(b, 27) + 1)
    if (chunk === "VP8 ") return webp(u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff)
    if (chunk === "VP8L") {
      const bits = (b[21] ?? 0) | ((b[22] ?? 0) << 8) | ((b[23] ?? 0) << 16) | ((b[24] ?? 0) << 24)
      return webp((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1)
    }
    return undefined
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    // Walk the JPEG segments to the first start-of-frame marker (C0–CF but C4, C8, CC).
    let at = 2
    while (at + 9 < b.length && b[at] === 0xff) {
      const marker = b[at + 1] ?? 0
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { mime: "image/jpeg", extension: "jpg", width: u16be(b, at + 7), height: u16be(b, at + 5) }
      }
      at += 2 + u16be(b, at + 2)
    }
    return undefined
  }
  return undefined
}

const THUMBNAIL_SIDES = [90, 320, 800, 1280]
const MAX_SIDE = 2560
const MAX_PHOTO_BYTES = 10 * 1024 * 1024
const MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024

export class FileStore {
  readonly #byId = new Map<string, StoredFile>()
  readonly #byPath = new Map<string, StoredFile>()
  /** file_id of any variant → all variants of that photo. */
  readonly #photos = new Map<string, ReadonlyArray<PhotoSize>>()
  #next = 1

  /**
   * Stores a photo and returns its PhotoSize variants, smallest first. `fromUser` photos are taken as
   * they are (800×600 when the header is unknown); the bot's uploads are checked as Telegram does.
   */
  addPhoto(bytes: Uint8Array, options: { readonly fromUser: boolean; readonly mime?: string | undefined }): ReadonlyArray<PhotoSize> {
    const sniffed = sniffImage(bytes)
    if (!options.fromUser) {
      if (bytes.length === 0) throw badRequest("file must be non-empty")
      if (bytes.length > MAX_PHOTO_BYTES) throw badRequest("PHOTO_SAVE_FILE_INVALID")
      if (sniffed === undefined) throw badRequest("IMAGE_PROCESS_FAILED")
      const { width, height } = sniffed
      if (width + height > 10_000 || Math.max(width, height) > 20 * Math.max(1, Math.min(width, height))) {
        throw badRequest("PHOTO_INVALID_DIMENSIONS")
      }
    }
    const info = sniffed ?? { mime: options.mime ?? "image/jpeg", extension: extensionOf(options.mime), width: 800, height: 600 }
    const longest = Math.max(info.width, info.height, 1)
    const sides = [...THUMBNAIL_SIDES.filter((side) => side < longest), Math.min(longest, MAX_SIDE)]
    const sizes = sides.map((side): PhotoSize => {
      const scale = side / longest
      const file = this.#add(bytes, info.mime, `photos/file_${this.#next}.${info.extension}`, "AgACAgIAAxkBAAI")
      return {
        file_id: file.fileId,
        file_unique_id: file.fileUniqueId,
        width: Math.max(1, Math.round(info.width * scale)),
        height: Math.max(1, Math.round(info.height * scale)),
        file_size: bytes.length
      }
    })
    for (const size of sizes) this.#photos.set(size.file_id, sizes)
    return sizes
  }

  /** The variants of the photo one of whose file_ids this is. */
  photo(fileId: string): ReadonlyArray<PhotoSize> | undefined {
    return this.#photos.get(fileId)
  }

  byPath(filePath: string): StoredFile | undefined {
    return this.#byPath.get(filePath)
  }

  /** getFile's answer. */
  getFile(fileId: string): File {
    const file = this.#byId.get(fileId)
    if (file === undefined) throw badRequest("invalid file_id")
    if (file.bytes.length > MAX_DOWNLOAD_BYTES) throw badRequest("file is too big")
    return { file_id: file.fileId, file_unique_id: file.fileUniqueId, file_size: file.bytes.length, file_path: file.filePath }
  }

  #add(bytes: Uint8Array, mime: string, filePath: string, prefix: string): StoredFile {
    const n = this.#next++
    const file: StoredFile = {
      fileId: prefix + Buffer.from(`fake-file-${n}`).toString("base64url"),
      fileUniqueId: "AQAD" + Buffer.from(`u${n}`).toString("base64url"),
      filePath,
      mime,
      bytes
    }
    this.#byId.set(file.fileId, file)
    this.#byPath.set(file.filePath, file)
    return file
  }
}

const extensionOf = (mime: string | undefined): string => {
  switch (mime) {
    case "image/png":
      return "png"
    case "image/gif":
      return "gif"
    case "image/webp":
      return "webp"
    default:
      return "jpg"
  }
}
