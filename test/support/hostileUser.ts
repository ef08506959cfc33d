/**
 * A hostile chat user's turns, end to end through the runtime with a scripted model that makes the
 * tool calls the user asks for: "RUN: <command>" → a bash call, "READ: <path>" → a read call,
 * "WRITE: <path> <n>" → a write of n bytes; a tool result is echoed back as the reply.
 */
import { Effect, Stream } from "effect"
import type { TurnEvent } from "../../src/domain/runtime/types.ts"
import { Runtime } from "../../src/services/Runtime.ts"
import type { RecordedRequest, Scripted } from "./fakeLlm/script.ts"

type Message = { role: string; content?: unknown }
const messagesOf = (r: RecordedRequest) => (r.body as { messages?: Array<Message> }).messages ?? []
const textOf = (m: Message | undefined) => (typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? ""))

/** The model as a compliant tool user. */
export const compliant = (req: RecordedRequest): Scripted => {
  const messages = messagesOf(req)
  const last = messages[messages.length - 1]
  if (last?.role === "tool") return { kind: "reply", parts: [{ type: "text", text: `RESULT ${textOf(last)}` }] }
  const said = textOf(last)
  const run = /RUN: ([\s\S]*)$/.exec(said)
  if (run !== null) return { kind: "reply", parts: [{ type: "tool_call", id: `c${messages.length}`, name: "bash", input: { command: run[1] } }] }
  const read = /READ: (\S+)/.exec(said)
  if (read !== null) return { kind: "reply", parts: [{ type: "tool_call", id: `c${messages.length}`, name: "read", input: { path: read[1] } }] }
  const write = /WRITE: (\S+) (\d+)/.exec(said)
  if (write !== null) {
    return { kind: "reply", parts: [{ type: "tool_call", id: `c${messages.length}`, name: "write", input: { path: write[1], content: "x".repeat(Number(write[2])) } }] }
  }
  return { kind: "reply", parts: [{ type: "text", text: "ok" }] }
}

/** One turn of `user` (in chat `chatId`): its events, its first tool result and its text. */
export const say = (user: string, text: string, chatId?: string) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const chat = yield* runtime.resolve({ platform: "cli", externalUserId: user, chatId })
    const events = yield* Stream.runCollect(runtime.send(chat, text))
    const tool = events.find((e): e is Extract<TurnEvent, { type: "tool_end" }> => e.type === "tool_end")
    const reply = events.map((e) => (e.type === "text" ? e.text : e.type === "notice" ? `[notice] ${e.text}` : "")).join("")
    return { events, tool, reply, chat }
  })
