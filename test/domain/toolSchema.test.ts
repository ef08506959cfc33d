/**
 * Tool JSON schemas derived from the tools' input Schemas (src/domain/toolSchema.ts): every tool's
 * schema has the shape both providers accept, says what today's hand-checked bounds say, and agrees
 * with the decoder — every value the decoder accepts (generated from the Schema) conforms to the
 * JSON schema, and a key is `required` in the JSON exactly when the decoder fails without it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Exit, Schema } from "effect"
import { advertisedMaximum, inputSchemaOf, type ToolInputSchema } from "../../src/domain/toolSchema.ts"
import * as AgentTool from "../../src/layers/runtime/agentTool.ts"
import * as Bash from "../../src/layers/tools/bash.ts"
import * as Edit from "../../src/layers/tools/edit.ts"
import * as MemoryTool from "../../src/layers/tools/memory.ts"
import * as Read from "../../src/layers/tools/read.ts"
import * as Write from "../../src/layers/tools/write.ts"

type Json = Readonly<Record<string, unknown>>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)
const record = (u: unknown): Json => (isRecord(u) ? u : {})

interface Case {
  readonly name: string
  /** The tool's input Schema, as its `execute` decodes it. */
  readonly input: Schema.ConstraintDecoder<unknown>
  /** The Schema's fields, in order. */
  readonly fields: ReadonlyArray<string>
  /** The JSON schema the tool sends to the model. */
  readonly json: ToolInputSchema
  /** Bounds the model is told but the tool clamps instead of refusing (`path:keyword`). */
  readonly advisory?: ReadonlyArray<string>
}

/** Memory tools for every combination of memory capabilities (status is always there). */
const memoryActionSets: ReadonlyArray<ReadonlyArray<MemoryTool.MemoryAction>> = [false, true].flatMap((search) =>
  [false, true].flatMap((explorer) =>
    [false, true].map((profiles): ReadonlyArray<MemoryTool.MemoryAction> => [
      "status",
      ...(search ? ["search" as const] : []),
      ...(explorer ? ["describe" as const, "expand" as const] : []),
      ...(profiles ? ["profile_get" as const, "profile_update" as const] : [])
    ])
  )
)

const cases: ReadonlyArray<Case> = [
  { name: "bash", input: Bash.Input, fields: Object.keys(Bash.Input.fields), json: Bash.inputSchema, advisory: ["/timeout_seconds:maximum"] },
  { name: "read", input: Read.Input, fields: Object.keys(Read.Input.fields), json: Read.inputSchema },
  { name: "write", input: Write.Input, fields: Object.keys(Write.Input.fields), json: Write.inputSchema },
  { name: "edit", input: Edit.Input, fields: Object.keys(Edit.Input.fields), json: Edit.inputSchema },
  { name: "agent", input: AgentTool.Input, fields: Object.keys(AgentTool.Input.fields), json: inputSchemaOf(AgentTool.Input) },
  ...memoryActionSets.map((actions): Case => {
    const input = MemoryTool.inputFor(actions)
    return { name: `memory [${actions.join(", ")}]`, input, fields: Object.keys(input.fields), json: inputSchemaOf(input) }
  })
]

/** Every subschema with its JSON-pointer-like path. */
const nodes = (node: unknown, path = ""): Array<readonly [string, Json]> => {
  if (Array.isArray(node)) return node.flatMap((item, i) => nodes(item, `${path}/${i}`))
  if (!isRecord(node)) return []
  return [[path, node] as const, ...Object.entries(node).flatMap(([k, v]) => nodes(v, `${path}/${k}`))]
}

/**
 * Where `value` breaks `schema`, as `path:keyword` (the subset of JSON Schema the tools use; a
 * keyword this does not know fails the check, so the subset cannot grow unnoticed).
 */
const violations = (schema: Json, value: unknown, path = ""): Array<string> => {
  const out: Array<string> = []
  const known = new Set([
    "type", "description", "properties", "required", "additionalProperties", "items", "enum",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"
  ])
  for (const k of Object.keys(schema)) if (!known.has(k)) out.push(`${path}:unknown keyword ${k}`)
  const type = schema.type
  const typeOk = type === "object" ? isRecord(value)
    : type === "array" ? Array.isArray(value)
    : type === "integer" ? Number.isInteger(value)
    : type === "number" ? typeof value === "number" && Number.isFinite(value)
    : type === "string" || type === "boolean" ? typeof value === type
    : false
  if (!typeOk) return [...out, `${path}:type`]
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) out.push(`${path}:enum`)
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) out.push(`${path}:minimum`)
    if (typeof schema.maximum === "number" && value > schema.maximum) out.push(`${path}:maximum`)
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) out.push(`${path}:exclusiveMinimum`)
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) out.push(`${path}:exclusiveMaximum`)
  }
  if (typeof value === "string") {
    const length = [...value].length
    if (typeof schema.minLength === "number" && length < schema.minLength) out.push(`${path}:minLength`)
    if (typeof schema.maxLength === "number" && length > schema.maxLength) out.push(`${path}:maxLength`)
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) out.push(`${path}:minItems`)
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) out.push(`${path}:maxItems`)
    for (const [i, item] of value.entries()) out.push(...violations(record(schema.items), item, `${path}/${i}`))
  }
  if (isRecord(value)) {
    const properties = record(schema.properties)
    const required = Array.isArray(schema.required) ? schema.required : []
    for (const k of required) if (typeof k === "string" && !(k in value)) out.push(`${path}/${k}:required`)
    for (const [k, v] of Object.entries(value)) {
      if (k in properties) out.push(...violations(record(properties[k]), v, `${path}/${k}`))
      else if (schema.additionalProperties === false) out.push(`${path}/${k}:additionalProperties`)
    }
  }
  return out
}

/** Each object in `value` with the JSON subschema describing it and the path to it. */
const objects = (schema: Json, value: unknown, path: ReadonlyArray<string | number> = []): Array<{
  readonly schema: Json
  readonly value: Json
  readonly path: ReadonlyArray<string | number>
}> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => objects(record(schema.items), item, [...path, i]))
  if (!isRecord(value)) return []
  const properties = record(schema.properties)
  return [{ schema, value, path }, ...Object.entries(value).flatMap(([k, v]) => objects(record(properties[k]), v, [...path, k]))]
}

/** `root` with the key at `path` + `key` removed (copies along the way). */
const without = (root: unknown, path: ReadonlyArray<string | number>, key: string): unknown => {
  const [head, ...rest] = path
  if (head === undefined) return isRecord(root) ? Object.fromEntries(Object.entries(root).filter(([k]) => k !== key)) : root
  if (Array.isArray(root)) return root.map((item, i) => (i === head ? without(item, rest, key) : item))
  return isRecord(root) ? { ...root, [head]: without(root[head], rest, key) } : root
}

const accepts = (input: Case["input"], value: unknown) =>
  Exit.isSuccess(Schema.decodeUnknownExit(input)(value, { onExcessProperty: "error" }))

describe("tool JSON schemas: the shape providers accept", () => {
  for (const { name, json } of cases) {
    it(`${name}: a closed object at the top, no references, every property described`, () => {
      assert.strictEqual(json.type, "object")
      assert.strictEqual(json.additionalProperties, false)
      for (const keyword of ["anyOf", "oneOf", "allOf", "not", "enum", "$schema", "$defs"]) assert.notProperty(json, keyword)
      assert.isAbove(Object.keys(json.properties).length, 0)
      // The model sees the JSON as sent: check it after a JSON round trip.
      const sent: unknown = JSON.parse(JSON.stringify(json))
      for (const [path, node] of nodes(sent)) {
        for (const keyword of ["$ref", "$defs", "$schema", "definitions", "anyOf", "oneOf", "allOf"]) {
          assert.notProperty(node, keyword, `${name} ${path}`)
        }
        if (node.type !== "object") continue
        assert.strictEqual(node.additionalProperties, false, `${name} ${path}: closed object`)
        const properties = record(node.properties)
        const required = Array.isArray(node.required) ? node.required : []
        for (const k of required) assert.property(properties, String(k), `${name} ${path}: required ${String(k)} is a property`)
        for (const [k, property] of Object.entries(properties)) {
          const p = record(property)
          assert.isString(p.type, `${name} ${path}/${k}: has a type`)
          assert.isString(p.description, `${name} ${path}/${k}: has a description`)
          assert.isAbove(String(p.description).length, 5, `${name} ${path}/${k}: has a description`)
        }
      }
    })
  }

  const property = (json: ToolInputSchema, ...path: ReadonlyArray<string>): Json =>
    path.reduce<Json>((node, key) => record(key === "items" ? node.items : record(node.properties)[key]), json)
  const bounds = (node: Json) =>
    Object.fromEntries(
      Object.entries(node).filter(([k]) => ["type", "minimum", "maximum", "exclusiveMinimum", "minLength", "minItems", "maxItems", "enum"].includes(k))
    )

  it("says what the hand-written schemas said: integers, bounds, enums, required keys", () => {
    assert.deepStrictEqual(Bash.inputSchema.required, ["command"])
    assert.deepStrictEqual(bounds(property(Bash.inputSchema, "timeout_seconds")), {
      type: "number",
      exclusiveMinimum: 0,
      maximum: Bash.MAX_TIMEOUT_SECONDS
    })
    assert.include(String(property(Bash.inputSchema, "timeout_seconds").description), `at most ${Bash.MAX_TIMEOUT_SECONDS}`)
    // Schema.Int's safe-integer range is noise for the model and is left out.
    assert.deepStrictEqual(bounds(property(Read.inputSchema, "offset")), { type: "integer", minimum: 1 })
    assert.deepStrictEqual(bounds(property(Read.inputSchema, "limit")), { type: "integer", minimum: 1 })
    assert.deepStrictEqual(Write.inputSchema.required, ["path", "content"])
    assert.deepStrictEqual(Edit.inputSchema.required, ["path", "old_text", "new_text"])
    assert.strictEqual(property(Edit.inputSchema, "replace_all").type, "boolean")

    const agent = inputSchemaOf(AgentTool.Input)
    assert.deepStrictEqual(agent.required, ["tasks"])
    assert.deepStrictEqual(bounds(property(agent, "tasks")), { type: "array", minItems: 1, maxItems: AgentTool.MAX_TASKS })
    const task = property(agent, "tasks", "items")
    assert.deepStrictEqual(task.required, ["task"])
    assert.deepStrictEqual(Object.keys(record(task.properties)), ["task", "preset", "context", "model", "system", "tools", "max_turns", "timeout_seconds"])
    assert.deepStrictEqual(bounds(property(agent, "tasks", "items", "max_turns")), { type: "integer", minimum: 1, maximum: 100 })
    assert.deepStrictEqual(bounds(property(agent, "tasks", "items", "timeout_seconds")), { type: "number", minimum: 1, maximum: 3600 })
    assert.deepStrictEqual(bounds(property(agent, "tasks", "items", "tools")), { type: "array" })
    assert.deepStrictEqual(property(agent, "tasks", "items", "tools", "items"), { type: "string" })
    assert.deepStrictEqual(bounds(property(agent, "concurrency")), { type: "integer", minimum: 1, maximum: AgentTool.MAX_TASKS })
    assert.include(String(property(agent, "concurrency").description), `default ${AgentTool.DEFAULT_CONCURRENCY}`)
    assert.include(String(property(agent, "tasks", "items", "max_turns").description), `default ${AgentTool.DEFAULT_MAX_TURNS}`)
    assert.include(String(property(agent, "tasks", "items", "timeout_seconds").description), `default ${AgentTool.DEFAULT_TIMEOUT_SECONDS}`)

    const all: ReadonlyArray<MemoryTool.MemoryAction> = ["status", "search", "describe", "expand", "profile_get", "profile_update"]
    const memory = inputSchemaOf(MemoryTool.inputFor(all))
    assert.deepStrictEqual(memory.required, ["action"])
    assert.deepStrictEqual(Object.keys(memory.properties), ["action", "query", "limit", "strict", "context", "include_memory_calls", "id", "cursor", "content"])
    assert.deepStrictEqual(bounds(property(memory, "action")), { type: "string", enum: all })
    assert.deepStrictEqual(bounds(property(memory, "limit")), { type: "integer", minimum: 1, maximum: MemoryTool.MAX_SEARCH_HITS })
    assert.deepStrictEqual(bounds(property(memory, "cursor")), { type: "integer", minimum: 0 })
    assert.deepStrictEqual(bounds(property(memory, "context")), { type: "integer", minimum: 0, maximum: MemoryTool.MAX_SEARCH_CONTEXT })
    assert.deepStrictEqual(bounds(property(memory, "strict")), { type: "boolean" })
    const small = inputSchemaOf(MemoryTool.inputFor(["status", "profile_get", "profile_update"]))
    assert.deepStrictEqual(Object.keys(small.properties), ["action", "content"])
    assert.deepStrictEqual(property(small, "action").enum, ["status", "profile_get", "profile_update"])
  })
})

describe("tool JSON schemas agree with the decoders", () => {
  for (const { name, input, json, advisory = [] } of cases) {
    it.prop(
      `${name}: decoded values conform to the JSON schema, and required = fails without`,
      { value: Arbitrary.schema(input) },
      ({ value }) => {
        // The model's arguments arrive as JSON.
        const sent: unknown = JSON.parse(JSON.stringify(value))
        assert.isTrue(accepts(input, sent), `${name} decodes ${JSON.stringify(sent)}`)
        assert.deepStrictEqual(violations(json, sent).filter((v) => !advisory.includes(v)), [], JSON.stringify(sent))
        for (const { schema, value: object, path } of objects(json, sent)) {
          const required = Array.isArray(schema.required) ? schema.required : []
          for (const key of Object.keys(object)) {
            assert.strictEqual(
              !accepts(input, without(sent, path, key)),
              required.includes(key),
              `${name}: ${[...path, key].join(".")} is required in the JSON schema exactly when the decoder needs it`
            )
          }
        }
      },
      { arbitrary: { runs: 200 } }
    )
  }

  it("the JSON top level lists exactly the Schema's fields", () => {
    for (const { name, fields, json } of cases) assert.deepStrictEqual(Object.keys(json.properties), fields, name)
  })

  it("out-of-range values the JSON schema forbids are refused with a readable message", () => {
    const message = (input: Case["input"], value: unknown) => {
      const exit = Schema.decodeUnknownExit(input)(value, { onExcessProperty: "error" })
      return Exit.isFailure(exit) ? String(exit.cause) : "accepted"
    }
    const memory = MemoryTool.inputFor(["status", "search", "describe", "expand"])
    assert.include(message(memory, { action: "search", query: "x", limit: 51 }), "between 1 and 50")
    assert.include(message(memory, { action: "expand", id: "sum_1", cursor: -1 }), "cursor")
    assert.include(message(memory, { action: "expand", id: "sum_1", cursor: 1.5 }), "integer")
    assert.include(message(AgentTool.Input, { tasks: [{ task: "x", timeout_seconds: 4000 }] }), "between 1 and 3600")
    assert.include(message(AgentTool.Input, { tasks: [{ task: "" }] }), "task")
    assert.include(message(Read.Input, { path: "a", offset: 0 }), "offset")
    // bash clamps a long timeout instead (the model is told the maximum).
    assert.strictEqual(message(Bash.Input, { command: "ls", timeout_seconds: 10_000 }), "accepted")
  })
})

describe("inputSchemaOf", () => {
  it("inlines named schemas, leaves optional keys out of required and drops the safe-integer range", () => {
    const Id = Schema.String.annotate({ identifier: "Id", description: "An id." })
    const json = inputSchemaOf(Schema.Struct({
      a: Id,
      b: Schema.optionalKey(Schema.Array(Id).annotate({ description: "Ids." })),
      n: Schema.optionalKey(Schema.Int.annotate({ description: "Any integer." })),
      m: Schema.Int.check(Schema.isLessThanOrEqualTo(5)).annotate({ description: "At most 5." })
    }))
    assert.deepStrictEqual(json, {
      type: "object",
      properties: {
        a: { type: "string", description: "An id." },
        b: { type: "array", items: { type: "string", description: "An id." }, description: "Ids." },
        n: { type: "integer", description: "Any integer." },
        m: { type: "integer", maximum: 5, description: "At most 5." }
      },
      required: ["a", "m"],
      additionalProperties: false
    })
    assert.deepStrictEqual(inputSchemaOf(Schema.Struct({})), { type: "object", properties: {}, required: [], additionalProperties: false })
  })

  it("refuses a recursive schema, which cannot be inlined", () => {
    interface Tree {
      readonly children: ReadonlyArray<Tree>
    }
    const Tree = Schema.Struct({
      children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
    }).annotate({ identifier: "Tree" })
    assert.throws(() => inputSchemaOf(Schema.Struct({ tree: Tree })), /recursive/)
  })

  it("advertisedMaximum tells the model a maximum the decoder does not enforce", () => {
    const input = Schema.Struct({ n: Schema.Finite.check(advertisedMaximum(10)).annotate({ description: "Clamped to 10." }) })
    assert.deepStrictEqual(inputSchemaOf(input).properties.n, { type: "number", maximum: 10, description: "Clamped to 10." })
    assert.isTrue(accepts(input, { n: 11 }))
  })
})
