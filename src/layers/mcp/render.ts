/** MCP answers as text for the model: tool results (text kept, images and binaries described), tool lists. */
import { Schema } from "effect"

const Content = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literals(["image", "audio"]), mimeType: Schema.String, data: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("resource"),
    resource: Schema.Struct({ uri: Schema.String, mimeType: Schema.optionalKey(Schema.String), text: Schema.optionalKey(Schema.String) })
  }),
  Schema.Struct({ type: Schema.Literal("resource_link"), uri: Schema.String, name: Schema.optionalKey(Schema.String) }),
  Schema.Struct({ type: Schema.String })
])
export const CallResult = Schema.Struct({
  content: Schema.optionalKey(Schema.Array(Content)),
  structuredContent: Schema.optionalKey(Schema.Unknown),
  isError: Schema.optionalKey(Schema.Boolean)
})
export const decodeCallResult = Schema.decodeUnknownEffect(CallResult)

/** Bytes a base64 string stands for. */
const base64Bytes = (data: string) => Math.floor((data.replace(/=+$/, "").length * 3) / 4)

export const resultText = (result: typeof CallResult.Type): string => {
  const parts = (result.content ?? []).map((c) => {
    if ("text" in c) return c.text
    if ("data" in c) return `[${c.type}: ${c.mimeType}, ${base64Bytes(c.data)} bytes — not shown]`
    if ("resource" in c) return c.resource.text ?? `[resource ${c.resource.uri}${c.resource.mimeType === undefined ? "" : ` (${c.resource.mimeType})`}]`
    if ("uri" in c) return `[link: ${c.name ?? c.uri} ${c.uri}]`
    return `[${c.type} content — not shown]`
  })
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  return parts.join("\n")
}

/** At most `max` characters; a cut says how much was left out. */
export const capText = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}\n[… cut: ${text.length - max} more characters of ${text.length}]`

/** The first line (at most 200 characters) of a description. */
export const oneLine = (text: string | undefined): string => {
  const first = (text ?? "").trim().split("\n")[0] ?? ""
  return first.length > 200 ? `${first.slice(0, 199)}…` : first
}
