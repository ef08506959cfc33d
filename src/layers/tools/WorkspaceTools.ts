/**
 * Layers for the built-in workspace tools (seed 001, "Built-in Tools"): `bash`, `read`, `write`,
 * `edit`, each bound to the session's sandbox (`CurrentSandbox`) when the layer is built. `bash`
 * runs through `session.exec`; the file tools resolve every path with `session.resolvePath` and then
 * use node:fs on the host, as the seed designs it. The tools themselves live in ./tools/.
 */
import { Layer } from "effect"
import { CurrentSandbox } from "../../services/Sandbox.ts"
import { BashTool, EditTool, ReadTool, WriteTool } from "../../services/WorkspaceTools.ts"
import * as Bash from "./bash.ts"
import * as Edit from "./edit.ts"
import * as Read from "./read.ts"
import * as Write from "./write.ts"

export { Bash, Edit, Read, Write }

export const bashLayer = Layer.effect(BashTool, CurrentSandbox.useSync((s) => BashTool.of(Bash.make(s))))
export const readLayer = Layer.effect(ReadTool, CurrentSandbox.useSync((s) => ReadTool.of(Read.make(s))))
export const writeLayer = Layer.effect(WriteTool, CurrentSandbox.useSync((s) => WriteTool.of(Write.make(s))))
export const editLayer = Layer.effect(EditTool, CurrentSandbox.useSync((s) => EditTool.of(Edit.make(s))))

/** All four built-ins. */
export const layer = Layer.mergeAll(bashLayer, readLayer, writeLayer, editLayer)
