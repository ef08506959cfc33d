/** Text helpers for what people read (pure). */

/** `text` on one line (runs of white space folded), cut to `max` characters with an ellipsis. */
export const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : flat.slice(0, max - 1) + "…"
}
