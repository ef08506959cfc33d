import { Effect, Stream } from "effect"
import { useEffect, useRef, useState } from "preact/hooks"
import type { ChatEvent } from "../../src/domain/admin/groups/chat.ts"
import type { Message } from "../../src/domain/message.ts"
import { call } from "../api.ts"
import { Markdown } from "../Markdown.tsx"
import { me } from "../state.ts"
import { Field, Notice, Page, Show, asError, useLoad } from "../ui.tsx"

interface Line {
  readonly id: number
  readonly kind: "user" | "assistant" | "notice" | "status" | "error"
  readonly text: string
  readonly streaming?: boolean
}

const COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ["/new", "start a fresh conversation (the old one stays in memory)"],
  ["/compact", "summarize the conversation now"],
  ["/abort", "stop the running answer"],
  ["/whoami", "who anna thinks you are, and the agent"],
  ["/model", "show or change the model"],
  ["/agent", "show or change the agent"]
]

/** Plain text of a stored message (tool blocks left out, as the chat shows them). */
const textOf = (m: Message) => (typeof m.content === "string" ? m.content : m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n"))

let lineIds = 0

/**
 * The web chat: one conversation with an agent this user may use, answers streamed from
 * POST /api/chat (Server-Sent Events, read by the typed client as a Stream). Slash commands work as
 * on every channel, and the memory is the same as the user's other channels'.
 */
export const Chat = () => {
  const agents = useLoad(() => call((c) => c.chat.agents()))
  const [agent, setAgent] = useState<string | undefined>(undefined)
  const [lines, setLines] = useState<ReadonlyArray<Line>>([])
  const [draft, setDraft] = useState("")
  const [busy, setBusy] = useState(false)
  const [sessionKey, setSessionKey] = useState<string | undefined>(undefined)
  const [error, setError] = useState<ReturnType<typeof asError> | undefined>(undefined)
  const abort = useRef<AbortController | undefined>(undefined)
  const log = useRef<HTMLDivElement>(null)
  const input = useRef<HTMLTextAreaElement>(null)

  useEffect(() => {
    if (agent === undefined && agents.data !== undefined && agents.data.length > 0) setAgent((agents.data.find((a) => a.isDefault) ?? agents.data[0])?.id)
  }, [agents.data, agent])

  // The latest web conversation with this agent, so the chat goes on where it was left.
  useEffect(() => {
    if (agent === undefined) return
    setLines([])
    setSessionKey(undefined)
    let stale = false
    void (async () => {
      try {
        // This user's own (an admin's list would hold everyone's).
        const user = me.value?.user
        const list = await call((c) => c.sessions.list({ query: { agent, platform: "web", limit: 1, ...(user !== undefined ? { user } : {}) } }))
        const s = list.sessions[0]
        if (s === undefined || stale) return
        const page = await call((c) => c.sessions.messages({ params: { key: s.sessionKey }, query: { from: Math.max(1, s.messages - 39), limit: 40 } }))
        if (stale) return
        setSessionKey(s.sessionKey)
        setLines(
          page.messages
            .filter((m) => m.role !== "tool_result")
            .map((m) => ({ id: ++lineIds, kind: m.role === "user" ? "user" : "assistant", text: textOf(m.message) }) as Line)
            .filter((l) => l.text.trim() !== "")
        )
      } catch {
        // No history to show: the chat starts empty.
      }
    })()
    return () => {
      stale = true
    }
  }, [agent])

  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight })
  }, [lines])

  const push = (line: Omit<Line, "id">) => setLines((ls) => [...ls, { ...line, id: ++lineIds }])
  const onEvent = (answerId: number) => (ev: ChatEvent) => {
    switch (ev.type) {
      case "start":
        setSessionKey(ev.sessionKey)
        break
      case "text":
        setLines((ls) => ls.map((l) => (l.id === answerId ? { ...l, text: l.text + ev.text } : l)))
        break
      case "notice":
      case "status":
        push({ kind: ev.type, text: ev.text })
        break
      case "error":
        push({ kind: "error", text: ev.message })
        break
      case "done":
        setLines((ls) => ls.map((l) => (l.id === answerId ? { ...l, streaming: false } : l)).filter((l) => l.id !== answerId || l.text !== ""))
        break
    }
  }

  const send = async (text: string) => {
    if (agent === undefined || text.trim() === "" || busy) return
    setError(undefined)
    setDraft("")
    const answerId = ++lineIds
    setLines((ls) => [...ls, { id: ++lineIds, kind: "user", text }, { id: answerId, kind: "assistant", text: "", streaming: true }])
    setBusy(true)
    const controller = new AbortController()
    abort.current = controller
    try {
      await call(
        (c) =>
          c.chat.send({ payload: { agent, message: text } }).pipe(
            Effect.flatMap((events) => Stream.runForEach(events, (ev) => Effect.sync(() => onEvent(answerId)(ev))))
          ),
        controller.signal
      )
    } catch (e) {
      const err = asError(e)
      if (err.code !== "aborted") setError(err)
    } finally {
      setLines((ls) => ls.map((l) => (l.id === answerId ? { ...l, streaming: false } : l)).filter((l) => l.id !== answerId || l.text !== ""))
      setBusy(false)
      abort.current = undefined
      input.current?.focus()
    }
  }

  /** Stops the turn on the server (the stream then ends with what was said); the request itself only if that fails. */
  const stop = async () => {
    const controller = abort.current
    const key = sessionKey
    const stopped = key === undefined ? false : await call((c) => c.sessions.abort({ params: { key } })).then((r) => r.aborted, () => false)
    if (!stopped) controller?.abort()
    else setTimeout(() => controller?.abort(), 5000)
  }

  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault()
      void send(draft)
    }
  }
  const suggestions = draft.startsWith("/") && !draft.includes(" ") ? COMMANDS.filter(([c]) => c.startsWith(draft)) : []

  return (
    <Page title="Chat">
      <Show loaded={agents}>
        {(list) =>
          list.length === 0 ? (
            <p class="notice">No agent is open to you yet. Ask an admin to give you access to one.</p>
          ) : (
            <div class="chat">
              <div class="chat-bar">
                <Field label="Agent">
                  {(id) => (
                    <select id={id} name="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)} disabled={busy}>
                      {list.map((a) => (
                        <option key={a.id} value={a.id}>{a.name !== "" && a.name !== a.id ? `${a.name} (${a.id})` : a.id}</option>
                      ))}
                    </select>
                  )}
                </Field>
                {sessionKey !== undefined && <small class="muted session-key">session <code>{sessionKey}</code></small>}
              </div>
              <div class="chat-log" ref={log} role="log" aria-live="polite" aria-label="Conversation">
                {lines.length === 0 && <p class="muted">Say hello. Type / for commands.</p>}
                {lines.map((l) => (
                  <div key={l.id} class={`bubble ${l.kind}${l.streaming === true ? " streaming" : ""}`} data-role={l.kind}>
                    <span class="sr-only">{l.kind === "user" ? "You: " : l.kind === "assistant" ? "Agent: " : `${l.kind}: `}</span>
                    {l.text === "" && l.streaming === true ? (
                      <span class="typing">…<span class="sr-only">answering</span></span>
                    ) : l.kind === "assistant" ? (
                      <Markdown text={l.text} />
                    ) : (
                      l.text
                    )}
                  </div>
                ))}
              </div>
              <Notice error={error} />
              <form
                class="chat-input"
                onSubmit={(e) => {
                  e.preventDefault()
                  void send(draft)
                }}
              >
                <label for="chat-message" class="sr-only">Message</label>
                <textarea
                  id="chat-message"
                  ref={input}
                  rows={2}
                  placeholder="Message, or / for commands"
                  title="Enter sends, Shift+Enter starts a new line"
                  value={draft}
                  onInput={(e) => setDraft(e.currentTarget.value)}
                  onKeyDown={onKeyDown}
                  aria-describedby={suggestions.length > 0 ? "chat-commands" : undefined}
                />
                {busy ? (
                  <button type="button" class="danger" onClick={() => void stop()}>Stop</button>
                ) : (
                  <button type="submit" class="primary" disabled={draft.trim() === ""}>Send</button>
                )}
              </form>
              {suggestions.length > 0 && (
                <ul id="chat-commands" class="commands" aria-label="Commands">
                  {suggestions.map(([c, what]) => (
                    <li key={c}>
                      <button type="button" class="link" onClick={() => { setDraft(`${c} `); input.current?.focus() }}><code>{c}</code></button> {what}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )
        }
      </Show>
    </Page>
  )
}
