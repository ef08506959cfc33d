/**
 * The ToolRegistry: built from the tool services present, extended with extra tools (the memory
 * tool), dispatching by name, and answering an unknown name with the tools that exist.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { type Tool, ToolError } from "../../../src/domain/tool.ts"
import * as MemoryTool from "../../../src/layers/tools/memory.ts"
import * as ToolRegistryLayer from "../../../src/layers/tools/ToolRegistry.ts"
import * as WorkspaceTools from "../../../src/layers/tools/WorkspaceTools.ts"
import { ToolRegistry } from "../../../src/services/ToolRegistry.ts"
import { lcmTemp } from "../../support/db.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { context } from "../../support/workspaceToolCases.ts"

const echo = (name: string): Tool => ({
  definition: { name, description: `echoes for ${name}`, inputSchema: { type: "object", properties: {}, additionalProperties: true } },
  execute: (input) => Effect.succeed(`${name}:${JSON.stringify(input)}`)
})

const workspace = WorkspaceTools.layer.pipe(Layer.provide(LocalSandbox.layer()))

describe("ToolRegistry", () => {
  it.effect("offers the built-ins present, in a fixed order, and runs them", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["bash", "read", "write", "edit"])
      assert.strictEqual(yield* registry.execute("write", { path: "a.txt", content: "hello\n" }, context), "wrote 6 bytes to a.txt (new file)")
      assert.strictEqual(yield* registry.execute("read", { path: "a.txt" }, context), "     1\thello")
      assert.isTrue(Option.isSome(registry.get("edit")))
      assert.isTrue(Option.isNone(registry.get("agent")))
    }).pipe(Effect.provide(ToolRegistryLayer.layer.pipe(Layer.provide(workspace)))))

  it.effect("offers only the tool services that are provided", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["read", "edit"])
      const unknown = yield* Effect.flip(registry.execute("bash", { command: "ls" }, context))
      assert.strictEqual(unknown.message, "bash: unknown tool; available tools: read, edit")
    }).pipe(
      Effect.provide(
        ToolRegistryLayer.layer.pipe(
          Layer.provide(Layer.mergeAll(WorkspaceTools.editLayer, WorkspaceTools.readLayer).pipe(Layer.provide(LocalSandbox.layer())))
        )
      )
    ))

  it.effect("an unknown tool fails with a ToolError naming the tools, and tool errors pass through", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      const unknown = yield* Effect.flip(registry.execute("rm_rf", {}, context))
      assert.instanceOf(unknown, ToolError)
      assert.strictEqual(unknown.tool, "rm_rf")
      assert.strictEqual(unknown.reason, "unknown tool; available tools: bash, read, write, edit")
      const missing = yield* Effect.flip(registry.execute("read", { path: "nope.txt" }, context))
      assert.strictEqual(missing.message, "read: no such file: nope.txt")
    }).pipe(Effect.provide(ToolRegistryLayer.layer.pipe(Layer.provide(workspace)))))

  it.effect("with no tools at all, says so", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      assert.deepStrictEqual(registry.definitions, [])
      const unknown = yield* Effect.flip(registry.execute("read", {}, context))
      assert.strictEqual(unknown.reason, "unknown tool; available tools: none")
    }).pipe(Effect.provide(ToolRegistryLayer.layer)))

  it.effect("adds the memory tool after the built-ins", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["bash", "read", "write", "edit", "memory"])
      assert.strictEqual(yield* registry.execute("memory", { action: "status" }, context), "This conversation has no stored messages yet.")
    }).pipe(Effect.provide(ToolRegistryLayer.layerWith(MemoryTool.make).pipe(Layer.provide(Layer.merge(workspace, lcmTemp))))))

  it.effect("fromTools keeps the order given and dispatches to the right tool", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistryLayer.fromTools([echo("b"), echo("a")])
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["b", "a"])
      assert.strictEqual(yield* registry.execute("a", { x: 1 }, context), `a:{"x":1}`)
      assert.strictEqual(yield* registry.execute("b", [], context), "b:[]")
    }))

  it.effect("two tools with one name are a wiring bug: building the registry dies", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(ToolRegistryLayer.make(Effect.succeed(echo("read"))).pipe(Effect.provide(workspace)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.isTrue(Cause.hasDies(exit.cause))
        assert.include(Cause.pretty(exit.cause), `two tools are named "read"`)
      }
    }))
})
