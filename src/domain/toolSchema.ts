/**
 * A tool's JSON schema for the model, derived from the Effect Schema that decodes the tool's input,
 * so what the model is told and what the tool accepts cannot drift apart. Field descriptions come
 * from `.annotate({ description })` on each field's schema; bounds, integers and enums from its checks.
 *
 * The result is the shape both providers accept for tool parameters: a plain top-level
 * `{ type: "object", properties, required, additionalProperties: false }`, every nested object
 * closed too, with no `$schema`, `$defs` or `$ref` (everything is inlined). Optional keys
 * (`Schema.optionalKey`) are simply absent from `required`.
 */
import { type JsonSchema, Schema, type SchemaAST } from "effect"

/** A tool's parameters as sent to the model (see `ToolDefinition.inputSchema`). */
export type ToolInputSchema = {
  readonly type: "object"
  readonly properties: Readonly<Record<string, JsonSchema.JsonSchema>>
  readonly required: ReadonlyArray<string>
  readonly additionalProperties: false
}

const isObject = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Keywords with no meaning for a tool parameter, or that a provider refuses. */
const DROPPED = new Set(["$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$defs", "definitions"])

/**
 * `Schema.isInt` emits the safe-integer range as bounds; they tell the model nothing, so they go
 * unless a check set a tighter one.
 */
const isSafeIntegerBound = (node: Readonly<Record<string, unknown>>, key: string): boolean =>
  node.type === "integer" &&
  ((key === "maximum" && node[key] === Number.MAX_SAFE_INTEGER) || (key === "minimum" && node[key] === Number.MIN_SAFE_INTEGER))

const bug = (message: string): never => {
  throw new Error(`inputSchemaOf: ${message}`)
}

/** Copies `node` with references inlined and the keywords providers refuse or ignore dropped. */
const clean = (node: unknown, definitions: JsonSchema.Definitions, seen: ReadonlyArray<string>): unknown => {
  if (Array.isArray(node)) return node.map((item) => clean(item, definitions, seen))
  if (!isObject(node)) return node
  const ref = node.$ref
  if (typeof ref === "string") {
    const name = ref.startsWith("#/$defs/") ? ref.slice("#/$defs/".length) : bug(`unsupported reference ${ref}`)
    if (seen.includes(name)) bug(`recursive schema ${name} cannot be inlined`)
    const target = definitions[name] ?? bug(`missing definition ${name}`)
    const { $ref: _, ...siblings } = node
    return clean({ ...target, ...siblings }, definitions, [...seen, name])
  }
  // A one-branch union (how `Schema.Literals([x])` comes out) is that branch.
  if (Array.isArray(node.anyOf) && node.anyOf.length === 1 && isObject(node.anyOf[0])) {
    const { anyOf: _, ...annotations } = node
    return clean({ ...node.anyOf[0], ...annotations }, definitions, seen)
  }
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED.has(key) || isSafeIntegerBound(node, key)) continue
    // Maps of subschemas keyed by property name: each value is a schema, the keys are not keywords.
    out[key] = key === "properties" || key === "patternProperties"
      ? isObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clean(v, definitions, seen)])) : value
      : clean(value, definitions, seen)
  }
  return out
}

/**
 * The JSON schema for a tool whose input `schema` decodes. Throws (a bug in the tool, not a runtime
 * condition) when the schema cannot be expressed in the provider-accepted shape: a recursive
 * schema, or a top level that is not a closed object.
 */
export const inputSchemaOf = <Fields extends Schema.Struct.Fields>(schema: Schema.Struct<Fields>): ToolInputSchema => {
  // Effect describes an empty struct as "anything but null"; a tool without parameters takes `{}`.
  if (Object.keys(schema.fields).length === 0) return { type: "object", properties: {}, required: [], additionalProperties: false }
  const document = Schema.toJsonSchemaDocument(schema, {
    onExcessProperty: "error",
    // Inline every named schema; only a recursive one would still need a reference (refused below).
    referencePolicy: () => undefined
  })
  const top = clean(document.schema, document.definitions, [])
  if (!isObject(top) || top.type !== "object") return bug("the top level is not an object")
  for (const keyword of ["anyOf", "oneOf", "allOf", "not", "enum", "const", "if"]) {
    if (keyword in top) bug(`providers refuse "${keyword}" at the top level`)
  }
  if (top.additionalProperties !== false) bug("the top level accepts unknown properties")
  const properties = isObject(top.properties) ? top.properties : {}
  const required = Array.isArray(top.required) ? top.required.filter((k): k is string => typeof k === "string") : []
  return {
    ...top,
    type: "object",
    properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, isObject(v) ? v : {}])),
    required,
    additionalProperties: false
  }
}

/**
 * A check that accepts every number but tells the model `maximum`: for a parameter the tool clamps
 * (a larger value is not an error, it just gets no more than `maximum`).
 */
export const advertisedMaximum = (maximum: number): SchemaAST.Filter<number> =>
  Schema.makeFilter(() => true, { toJsonSchema: () => ({ maximum }) })
