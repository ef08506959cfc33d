/**
 * Image types anna passes to models (shared by every channel, the notify tool and the web console,
 * so pure and free of node: modules): PNG, JPEG, GIF and WebP — what the model APIs accept — told
 * apart by their bytes, never by what a sender says a file is.
 */

/** The image types a model is given, as media types. */
export const IMAGE_MEDIA_TYPES: ReadonlyArray<string> = ["image/png", "image/jpeg", "image/gif", "image/webp"]

/** The image type of these bytes, from their signature, or undefined. */
export const sniffImage = (b: Uint8Array): string | undefined => {
  const at = (i: number) => b[i] ?? -1
  if (at(0) === 0x89 && at(1) === 0x50 && at(2) === 0x4e && at(3) === 0x47) return "image/png"
  if (at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) return "image/jpeg"
  if (at(0) === 0x47 && at(1) === 0x49 && at(2) === 0x46 && at(3) === 0x38) return "image/gif"
  if (at(0) === 0x52 && at(1) === 0x49 && at(2) === 0x46 && at(3) === 0x46 && at(8) === 0x57 && at(9) === 0x45 && at(10) === 0x42 && at(11) === 0x50) {
    return "image/webp"
  }
  return undefined
}
