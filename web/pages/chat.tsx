import { Effect, Stream } from "effect"
import { useEffect, useRef, useState } from "preact/hooks"
import { type ChatImage, estimatedMessageBytes, MAX_CHAT_IMAGES, MAX_CHAT_MESSAGE_BYTES, mib, showableImage } from "../../src/domain/admin/chatImages.ts"
import type { ChatEvent } from "../../src/domain/admin/groups/chat.ts"
import { IMAGE_MEDIA_TYPES, sniffImage } from "../../src/domain/channels/images.ts"
import type { Message } from "../../src/domain/message.ts"
import { call } from "../api.ts"
import { Markdown } from "../Markdown.tsx"
import { me } from "../state.ts"
import { Field, Notice, Page, Show, asError, useLoad } from "../ui.tsx"

interface Line {
  readonly id: number
  readonly kind: "user" | "assistant" | "notice" | "status" | "error"
  readonly text: string
  /** A user's images, as data: URLs of the types the gateway checked. */
  readonly images?: ReadonlyArray<string>
  readonly streaming?: boolean
}

/** An image chosen or pasted, waiting to be sent. */
interface Attachment extends ChatImage {
  readonly id: number
  readonly name: string
}

const dataUrl = (i: ChatImage) => `data:${i.mediaType};base64,${i.data}`
/** About how much image one message may carry (base64 takes a third more than the bytes). */
const IMAGE_ROOM = `${mib((MAX_CHAT_MESSAGE_BYTES * 3) / 4)} MiB`

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
/** A stored message's images the chat can show (base64 of a checked type; a URL is never fetched). */
const imagesOf = (m: Message) =>
  typeof m.content === "string"
    ? []
    : m.content.flatMap((b) =>
      b.type === "image" && b.source.type === "base64" && showableImage(b.source.media_type, b.source.data)
        ? [dataUrl({ mediaType: b.source.media_type, data: b.source.data })]
        : []
    )

/** A file's bytes as base64 (read by the browser, off the main thread). */
const base64Of = (file: Blob) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""))
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"))
    reader.readAsDataURL(file)
  })

let attachmentIds = 0

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
  const [attached, setAttachedState] = useState<ReadonlyArray<Attachment>>([])
  // The list as it is now, for additions that finish while others are being read (a paste during a pick).
  const attachedNow = useRef<ReadonlyArray<Attachment>>([])
  const setAttached = (next: ReadonlyArray<Attachment>) => {
    attachedNow.current = next
    setAttachedState(next)
  }
  const [attachError, setAttachError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [sessionKey, setSessionKey] = useState<string | undefined>(undefined)
  const [error, setError] = useState<ReturnType<typeof asError> | undefined>(undefined)
  const abort = useRef<AbortController | undefined>(undefined)
  const log = useRef<HTMLDivElement>(null)
  const input = useRef<HTMLTextAreaElement>(null)

  // The default agent until the user picks one. An update of the current value, not of this render's:
  // effects run after the paint, so a pick made in between (a quick hand, a test) is kept, not undone.
  useEffect(() => {
    const list = agents.data
    if (list !== undefined && list.length > 0) setAgent((current) => current ?? (list.find((a) => a.isDefault) ?? list[0])?.id)
  }, [agents.data])

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
            .map((m) => ({ id: ++lineIds, kind: m.role === "user" ? "user" : "assistant", text: textOf(m.message), images: imagesOf(m.message) }) as Line)
            .filter((l) => l.text.trim() !== "" || (l.images ?? []).length > 0)
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
      case "restart":
        setLines((ls) => ls.map((l) => (l.id === answerId ? { ...l, text: "" } : l)))
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

  /**
   * Checks and adds images (chosen or pasted): PNG, JPEG, GIF or WebP by their bytes, at most
   * MAX_CHAT_IMAGES, and no more than a message may carry — what the gateway checks again.
   */
  const addImages = async (files: ReadonlyArray<File>) => {
    setAttachError(undefined)
    const problems: Array<string> = []
    for (const file of files) {
      const name = file.name !== "" ? file.name : "pasted from the clipboard"
      // Measured before reading: a huge file is refused without being loaded.
      if ((file.size * 4) / 3 > MAX_CHAT_MESSAGE_BYTES) {
        problems.push(`${name} is too large (the images of one message may take about ${IMAGE_ROOM})`)
        continue
      }
      const mediaType = sniffImage(new Uint8Array(await file.slice(0, 16).arrayBuffer()))
      if (mediaType === undefined) {
        problems.push(`${name} is not a PNG, JPEG, GIF or WebP image`)
        continue
      }
      const image = { mediaType, data: await base64Of(file) }
      // Checked against the list as it is now, and added in the same step.
      const now = attachedNow.current
      if (now.length >= MAX_CHAT_IMAGES) {
        problems.push(`at most ${MAX_CHAT_IMAGES} images per message`)
        break
      }
      if (estimatedMessageBytes(draft, [...now, image]) > MAX_CHAT_MESSAGE_BYTES) {
        problems.push(`${name} does not fit: the images of one message may take about ${IMAGE_ROOM}`)
        continue
      }
      setAttached([...now, { id: ++attachmentIds, name, ...image }])
    }
    if (problems.length > 0) setAttachError(`${problems.join("; ")}.`)
  }

  const onPaste = (e: ClipboardEvent) => {
    const files = [...(e.clipboardData?.items ?? [])].flatMap((i) => (i.kind === "file" ? [i.getAsFile()] : [])).filter((f): f is File => f !== null)
    if (files.length === 0) return
    // Only a paste of pictures alone is taken over: pasted text still goes into the message.
    if ((e.clipboardData?.getData("text/plain") ?? "") === "") e.preventDefault()
    void addImages(files)
  }

  const send = async (text: string) => {
    if (agent === undefined || (text.trim() === "" && attached.length === 0) || busy) return
    setError(undefined)
    setAttachError(undefined)
    setDraft("")
    const images = attached
    setAttached([])
    const answerId = ++lineIds
    const urls = images.map(dataUrl)
    setLines((ls) => [...ls, { id: ++lineIds, kind: "user", text, images: urls }, { id: answerId, kind: "assistant", text: "", streaming: true }])
    setBusy(true)
    const controller = new AbortController()
    abort.current = controller
    try {
      await call(
        (c) =>
          c.chat.send({ payload: { agent, message: text, ...(urls.length > 0 ? { images: urls } : {}) } }).pipe(
            Effect.flatMap((events) => Stream.runForEach(events, (ev) => Effect.sync(() => onEvent(answerId)(ev))))
          ),
        controller.signal
      )
    } catch (e) {
      const err = asError(e)
      if (err.code !== "aborted") setError(err)
      // Refused before it was taken: the images are given back, to remove some and send again.
      if (err.code !== "aborted" && images.length > 0 && attachedNow.current.length === 0) setAttached(images)
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
                    {(l.images ?? []).length > 0 && (
                      <div class="chat-images">
                        {(l.images ?? []).map((src, i, all) => <img key={i} src={src} alt={`attachment ${i + 1} of ${all.length}`} />)}
                      </div>
                    )}
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
                  onPaste={onPaste}
                  aria-describedby={suggestions.length > 0 ? "chat-commands" : undefined}
                />
                <input
                  id="chat-images"
                  class="sr-only"
                  type="file"
                  accept={IMAGE_MEDIA_TYPES.join(",")}
                  multiple
                  disabled={busy}
                  onChange={(e) => {
                    const input = e.currentTarget
                    const files = [...(input.files ?? [])]
                    // Emptied, so the same file can be chosen again after it was removed.
                    input.value = ""
                    void addImages(files)
                  }}
                />
                <label for="chat-images" class="button" title={`PNG, JPEG, GIF or WebP, up to ${MAX_CHAT_IMAGES}, about ${IMAGE_ROOM} in all; or paste them`}>
                  Attach images
                </label>
                {busy ? (
                  <button type="button" class="danger" onClick={() => void stop()}>Stop</button>
                ) : (
                  <button type="submit" class="primary" disabled={draft.trim() === "" && attached.length === 0}>Send</button>
                )}
              </form>
              {attachError !== undefined && <p class="notice error" role="alert">{attachError}</p>}
              {attached.length > 0 && (
                <ul class="chat-attachments" aria-label="Images to send">
                  {attached.map((a) => (
                    <li key={a.id}>
                      <img src={dataUrl(a)} alt={a.name} />
                      <button type="button" class="small" onClick={() => setAttached(attachedNow.current.filter((x) => x.id !== a.id))} aria-label={`Remove image ${a.name}`}>
                        Remove
                      </button>
                    </li>
                  ))}
                </ul>
              )}
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
