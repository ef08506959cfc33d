/**
 * The one path tools take to a session: sources registered with the ToolCatalog by their layers
 * (the workspace tools when a Sandbox is present, the memory tool), filtered by the agent's tool
 * list, the sandbox started only when a source needs it; and the ToolRegistry built from the set,
 * dispatching by name and answering an unknown name with the tools that exist.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Scope } from "effect"
import { SandboxFailure } from "../../../src/domain/sandbox/errors.ts"
import { type Tool, ToolError } from "../../../src/domain/tool.ts"
import * as MemoryTool from "../../../src/layers/tools/memory.ts"
import * as ToolCatalogLayer from "../../../src/layers/tools/ToolCatalog.ts"
import { toolRegistry } from "../../../src/domain/tool.ts"
import * as WorkspaceTools from "../../../src/layers/tools/WorkspaceTools.ts"
import { Sandbox } from "../../../src/services/Sandbox.ts"
import { ToolCatalog, type ToolSession } from "../../../src/services/ToolCatalog.ts"
import { lcmTemp } from "../../support/db.ts"
import * as LocalSandbox from "../../support/localSandbox.ts"
import { context } from "../../support/workspaceToolCases.ts"

const echo = (name: string): Tool => ({
  definition: { name, description: `echoes for ${name}`, inputSchema: { type: "object", properties: {}, additionalProperties: true } },
  execute: (input) => Effect.succeed(`${name}:${JSON.stringify(input)}`)
})

/** A session of agent a1 that enables `names` (all when null), starting its sandbox from the Sandbox service. */
const session = (names: ReadonlyArray<string> | null) =>
  Effect.gen(function*() {
    const sandbox = yield* Effect.serviceOption(Sandbox)
    const scope = yield* Effect.scope
    const s: ToolSession = {
      agentId: "a1",
      userId: "u1",
      sessionKey: "a1:cli:u1:dm",
      enabled: (name) => names === null || names.includes(name),
      sandbox: Option.isSome(sandbox)
        ? sandbox.value.start({} as never).pipe(Scope.provide(scope))
        : Effect.fail(new SandboxFailure({ operation: "start", detail: "no sandbox" }))
    }
    return s
  })

const toolsOf = (names: ReadonlyArray<string> | null) =>
  Effect.gen(function*() {
    const catalog = yield* ToolCatalog
    const tools = yield* catalog.tools(yield* session(names))
    return yield* toolRegistry(tools)
  })

const builtins = (started: { count: number } = { count: 0 }) =>
  Layer.mergeAll(WorkspaceTools.layer, MemoryTool.layer).pipe(
    Layer.provideMerge(ToolCatalogLayer.layer),
    Layer.provideMerge(LocalSandbox.sandboxLayer({}, started)),
    Layer.provideMerge(lcmTemp)
  )

describe("ToolCatalog", () => {
  it.effect("offers the workspace tools, then the memory tool, and runs them", () =>
    Effect.gen(function*() {
      const registry = yield* toolsOf(null)
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["bash", "read", "write", "edit", "memory"])
      assert.deepStrictEqual(yield* (yield* ToolCatalog).sources, ["workspace", "memory"])
      assert.strictEqual(yield* registry.execute("write", { path: "a.txt", content: "hello\n" }, context), "wrote 6 bytes to a.txt (new file)")
      assert.strictEqual(yield* registry.execute("read", { path: "a.txt" }, context), "     1\thello")
      assert.strictEqual(yield* registry.execute("memory", { action: "status" }, context), "This conversation has no stored messages yet.")
      assert.isTrue(Option.isNone(registry.get("agent")))
    }).pipe(Effect.scoped, Effect.provide(builtins())))

  it.effect("offers only the tools the agent enables, and starts no sandbox when none of them needs one", () => {
    const started = { count: 0 }
    return Effect.gen(function*() {
      const some = yield* toolsOf(["read", "edit"])
      assert.deepStrictEqual(some.definitions.map((d) => d.name), ["read", "edit"])
      const unknown = yield* Effect.flip(some.execute("bash", { command: "ls" }, context))
      assert.strictEqual(unknown.message, "bash: unknown tool; available tools: read, edit")
      assert.strictEqual(started.count, 1)
      const memoryOnly = yield* toolsOf(["memory"])
      assert.deepStrictEqual(memoryOnly.definitions.map((d) => d.name), ["memory"])
      assert.strictEqual(started.count, 1, "no sandbox for an agent without workspace tools")
    }).pipe(Effect.scoped, Effect.provide(builtins(started)))
  })

  it.effect("without a Sandbox in the deployment the workspace tools are left out", () =>
    Effect.gen(function*() {
      const registry = yield* toolsOf(null)
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["memory"])
      assert.deepStrictEqual(yield* (yield* ToolCatalog).sources, ["memory"])
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(WorkspaceTools.layer, MemoryTool.layer).pipe(Layer.provideMerge(ToolCatalogLayer.layer), Layer.provideMerge(lcmTemp)))
    ))

  it.effect("a new source joins by adding a layer; a sandbox that cannot start leaves out only the tools that need it", () =>
    Effect.gen(function*() {
      const registry = yield* toolsOf(null)
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["bash", "read", "write", "edit", "memory", "echo"])
      const catalog = yield* ToolCatalog
      const s = yield* session(null)
      const without = yield* catalog.tools({ ...s, sandbox: Effect.fail(new SandboxFailure({ operation: "start", detail: "daemon down" })) })
      assert.deepStrictEqual(without.map((t) => t.definition.name), ["memory", "echo"])
    }).pipe(
      Effect.scoped,
      Effect.provide(
        ToolCatalogLayer.register(Effect.succeed({ id: "echo", tools: () => Effect.succeed([echo("echo")]) })).pipe(Layer.provideMerge(builtins()))
      )
    ))

  it.effect("two tools with one name are a wiring bug: building the set dies", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(toolsOf(null))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.isTrue(Cause.hasDies(exit.cause))
        assert.include(Cause.pretty(exit.cause), `two tools are named "read"`)
      }
    }).pipe(
      Effect.scoped,
      Effect.provide(ToolCatalogLayer.register(Effect.succeed({ id: "dup", tools: () => Effect.succeed([echo("read")]) })).pipe(Layer.provideMerge(builtins())))
    ))
})

describe("ToolRegistry.fromTools", () => {
  it.effect("keeps the order given, dispatches to the right tool, and names the tools for an unknown one", () =>
    Effect.gen(function*() {
      const registry = yield* toolRegistry([echo("b"), echo("a")])
      assert.deepStrictEqual(registry.definitions.map((d) => d.name), ["b", "a"])
      assert.strictEqual(yield* registry.execute("a", { x: 1 }, context), `a:{"x":1}`)
      assert.strictEqual(yield* registry.execute("b", [], context), "b:[]")
      const unknown = yield* Effect.flip(registry.execute("rm_rf", {}, context))
      assert.instanceOf(unknown, ToolError)
      assert.strictEqual(unknown.reason, "unknown tool; available tools: b, a")
      const none = yield* toolRegistry([])
      assert.strictEqual((yield* Effect.flip(none.execute("read", {}, context))).reason, "unknown tool; available tools: none")
    }))

  it.effect("two tools with one name die", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(toolRegistry([echo("x"), echo("x")]))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
    }))
})
