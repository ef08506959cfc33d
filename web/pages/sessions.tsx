import { useState } from "preact/hooks"
import type { Message } from "../../src/domain/message.ts"
import { call } from "../api.ts"
import { Markdown } from "../Markdown.tsx"
import { href, isAdmin, navigate } from "../state.ts"
import { Field, Notice, Page, Show, asError, formatNumber, formatTime, useAction, useLoad } from "../ui.tsx"

/** The session browser: a filtered list, one session's conversation and summaries, and search. */
export const Sessions = (props: { readonly args: ReadonlyArray<string> }) => {
  const key = props.args[0]
  if (key === "search") return <Search />
  return key === undefined ? <SessionList /> : <SessionView sessionKey={key} />
}

const PAGE = 50

const SessionList = () => {
  const [filters, setFilters] = useState({ agent: "", user: "", platform: "", q: "", state: "" })
  const [offset, setOffset] = useState(0)
  const list = useLoad(
    () =>
      call((c) =>
        c.sessions.list({
          query: {
            ...(filters.agent !== "" ? { agent: filters.agent } : {}),
            ...(filters.user !== "" ? { user: filters.user } : {}),
            ...(filters.platform !== "" ? { platform: filters.platform } : {}),
            ...(filters.q !== "" ? { q: filters.q } : {}),
            ...(filters.state === "live" || filters.state === "idle" ? { state: filters.state } : {}),
            limit: PAGE,
            offset
          }
        })
      ),
    [filters, offset]
  )
  const apply = (e: Event) => {
    e.preventDefault()
    const f = Object.fromEntries(new FormData(e.currentTarget as HTMLFormElement).entries()) as Record<string, string>
    setOffset(0)
    setFilters({ agent: (f["agent"] ?? "").trim(), user: (f["user"] ?? "").trim(), platform: (f["platform"] ?? "").trim(), q: (f["q"] ?? "").trim(), state: f["state"] ?? "" })
  }
  return (
    <Page title="Sessions" actions={<a class="button" href={href("sessions", "search")}>Search memory</a>}>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <Field label="Text">{(id) => <input id={id} name="q" type="search" placeholder="key or title" />}</Field>
        <Field label="Agent">{(id) => <input id={id} name="agent" />}</Field>
        {isAdmin.value && <Field label="User">{(id) => <input id={id} name="user" />}</Field>}
        <Field label="Platform">{(id) => <input id={id} name="platform" placeholder="web, telegram…" />}</Field>
        <Field label="State">
          {(id) => (
            <select id={id} name="state">
              <option value="">any</option>
              <option value="live">live</option>
              <option value="idle">idle</option>
            </select>
          )}
        </Field>
        <button type="submit">Filter</button>
      </form>
      <Show loaded={list}>
        {(l) => (
          <>
            <p class="muted" role="status">{l.total === 0 ? "No session matches." : `${formatNumber(l.total)} session${l.total === 1 ? "" : "s"}`}</p>
            {l.sessions.length > 0 && (
              <div class="table-wrap">
                <table>
                  <caption class="sr-only">Sessions</caption>
                  <thead>
                    <tr><th scope="col">Session</th><th scope="col">Agent</th><th scope="col">User</th><th scope="col">Platform</th><th scope="col">Messages</th><th scope="col">Last activity</th><th scope="col">State</th></tr>
                  </thead>
                  <tbody>
                    {l.sessions.map((s) => (
                      <tr key={s.sessionKey}>
                        <th scope="row"><a href={href("sessions", s.sessionKey)}>{s.title ?? s.sessionKey}</a></th>
                        <td>{s.agentId}</td>
                        <td>{s.userId}</td>
                        <td>{s.platform}</td>
                        <td>{formatNumber(s.messages)}</td>
                        <td>{formatTime(s.lastActivityAt)}</td>
                        <td>{s.running ? "running" : s.live ? "live" : "idle"}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <div class="pager">
              <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>Previous</button>
              <button type="button" disabled={offset + PAGE >= l.total} onClick={() => setOffset(offset + PAGE)}>Next</button>
            </div>
          </>
        )}
      </Show>
    </Page>
  )
}

/** One content block: text as text, images named, tool calls and results folded. */
const Blocks = (props: { readonly message: Message }) => {
  const c = props.message.content
  const md = props.message.role === "assistant"
  if (typeof c === "string") return md ? <Markdown text={c} /> : <div class="text">{c}</div>
  return (
    <>
      {c.map((b, i) => {
        switch (b.type) {
          case "text":
            return md ? <Markdown key={i} text={b.text} /> : <div class="text" key={i}>{b.text}</div>
          case "image":
            return <div class="muted" key={i}>[image]</div>
          case "tool_use":
            return (
              <details class="tool" key={i}>
                <summary>Tool call: <code>{b.name}</code></summary>
                <pre>{JSON.stringify(b.input, null, 2)}</pre>
              </details>
            )
          case "tool_result": {
            const text = typeof b.content === "string" ? b.content : b.content.map((x) => (x.type === "text" ? x.text : "[image]")).join("\n")
            return (
              <details class={`tool${b.is_error === true ? " failed" : ""}`} key={i}>
                <summary>Tool result{b.is_error === true ? " (error)" : ""}</summary>
                <pre>{text}</pre>
              </details>
            )
          }
        }
        return null
      })}
    </>
  )
}

const SessionView = (props: { readonly sessionKey: string }) => {
  const key = props.sessionKey
  const [tab, setTab] = useState<"conversation" | "summaries">("conversation")
  const detail = useLoad(() => call((c) => c.sessions.get({ params: { key } })), [key])
  const action = useAction()
  const newContext = async () => {
    const r = await action.run(() => call((c) => c.sessions.newContext({ params: { key } })))
    if (r !== undefined) detail.reload()
  }
  const abort = async () => {
    const r = await action.run(() => call((c) => c.sessions.abort({ params: { key } })))
    if (r !== undefined) detail.reload()
  }
  return (
    <Page title="Session">
      <p><a href={href("sessions")}>← All sessions</a></p>
      <Notice error={action.error} />
      <Show loaded={detail}>
        {(d) => (
          <>
            <dl class="facts">
              <div><dt>Key</dt><dd><code>{d.session.sessionKey}</code></dd></div>
              <div><dt>Agent</dt><dd>{d.session.agentId}</dd></div>
              <div><dt>User</dt><dd>{d.session.userId}</dd></div>
              <div><dt>Messages</dt><dd>{formatNumber(d.session.messages)}</dd></div>
              <div><dt>Summaries</dt><dd>{formatNumber(d.summaries)}</dd></div>
              <div><dt>Context</dt><dd>{formatNumber(d.contextTokens)} tokens in {d.contextItems} items</dd></div>
              <div><dt>Last activity</dt><dd>{formatTime(d.session.lastActivityAt)}</dd></div>
              <div><dt>State</dt><dd>{d.session.running ? "a turn is running" : d.session.live ? "live" : "idle"}</dd></div>
            </dl>
            <div class="actions">
              <button type="button" onClick={() => void newContext()} disabled={action.busy}>Start a fresh context</button>
              {d.session.running && <button type="button" class="danger" onClick={() => void abort()}>Abort the running turn</button>}
            </div>
          </>
        )}
      </Show>
      {/* Tabs as ARIA has them: one tab stop, the arrow keys move between them. */}
      <div
        class="tabs"
        role="tablist"
        aria-label="Session views"
        onKeyDown={(e) => {
          if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return
          e.preventDefault()
          const next = tab === "conversation" ? "summaries" : "conversation"
          setTab(next)
          document.getElementById(`tab-${next}`)?.focus()
        }}
      >
        {(["conversation", "summaries"] as const).map((t) => (
          <button type="button" role="tab" key={t} id={`tab-${t}`} aria-selected={tab === t} aria-controls="panel" tabIndex={tab === t ? 0 : -1} onClick={() => setTab(t)}>
            {t === "conversation" ? "Conversation" : "Summaries"}
          </button>
        ))}
      </div>
      <div id="panel" role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {tab === "conversation" ? <Conversation sessionKey={key} /> : <Summaries sessionKey={key} />}
      </div>
    </Page>
  )
}

type StoredMessage = Awaited<ReturnType<typeof loadMessages>>["messages"][number]
const loadMessages = (key: string, from: number) => call((c) => c.sessions.messages({ params: { key }, query: { from, limit: PAGE } }))

const Conversation = (props: { readonly sessionKey: string }) => {
  const [extra, setExtra] = useState<{ messages: ReadonlyArray<StoredMessage>; next: number | null }>({ messages: [], next: null })
  const first = useLoad(async () => {
    const p = await loadMessages(props.sessionKey, 1)
    setExtra({ messages: [], next: p.nextSeq })
    return p
  }, [props.sessionKey])
  const action = useAction()
  const more = async () => {
    if (extra.next === null) return
    const from = extra.next
    const p = await action.run(() => loadMessages(props.sessionKey, from))
    if (p !== undefined) setExtra({ messages: [...extra.messages, ...p.messages], next: p.nextSeq })
  }
  return (
    <Show loaded={first}>
      {(p) => (
        <>
          <ol class="conversation">
            {[...p.messages, ...extra.messages].map((m) => (
              <li key={m.id} class={`msg ${m.role}`}>
                <div class="msg-head"><strong>{m.role === "tool_result" ? "tool results" : m.role}</strong> <time>{formatTime(m.createdAt)}</time> <span class="muted">{m.id}</span></div>
                <Blocks message={m.message} />
              </li>
            ))}
          </ol>
          {p.messages.length === 0 && <p class="muted">No message yet.</p>}
          <Notice error={action.error} />
          {extra.next !== null && <button type="button" onClick={() => void more()} disabled={action.busy}>Load more</button>}
        </>
      )}
    </Show>
  )
}

type Expanded = Awaited<ReturnType<typeof expand>>
const expand = (id: string) => call((c) => c.sessions.expandSummary({ params: { id }, query: {} }))

const Summaries = (props: { readonly sessionKey: string }) => {
  const list = useLoad(() => call((c) => c.sessions.summaries({ params: { key: props.sessionKey } })), [props.sessionKey])
  const [open, setOpen] = useState<Record<string, { content?: string; expanded?: Expanded; error?: string }>>({})
  const describe = async (id: string) => {
    try {
      const d = await call((c) => c.sessions.describeSummary({ params: { id } }))
      setOpen((o) => ({ ...o, [id]: { ...o[id], content: d.content } }))
    } catch (e) {
      setOpen((o) => ({ ...o, [id]: { ...o[id], error: asError(e).message } }))
    }
  }
  const doExpand = async (id: string) => {
    try {
      const x = await expand(id)
      setOpen((o) => ({ ...o, [id]: { ...o[id], expanded: x } }))
    } catch (e) {
      setOpen((o) => ({ ...o, [id]: { ...o[id], error: asError(e).message } }))
    }
  }
  return (
    <Show loaded={list}>
      {(l) =>
        l.summaries.length === 0 ? (
          <p class="muted">No summary yet: this conversation still fits its context.</p>
        ) : (
          <ul class="summaries">
            {l.summaries.map((s) => {
              const o = open[s.id]
              return (
                <li key={s.id} class={s.live ? "live" : ""}>
                  <div class="msg-head">
                    <strong>{s.id}</strong> {s.kind}, depth {s.depth}, {formatNumber(s.tokens)} tokens from {formatNumber(s.sourceTokens)} · messages {s.covers.firstSeq}–{s.covers.lastSeq}
                    {s.live && <span class="badge">in context</span>}
                  </div>
                  <div class="actions">
                    <button type="button" class="small" onClick={() => void describe(s.id)} aria-expanded={o?.content !== undefined}>Show summary</button>
                    <button type="button" class="small" onClick={() => void doExpand(s.id)} aria-expanded={o?.expanded !== undefined}>Expand</button>
                  </div>
                  {o?.error !== undefined && <p class="notice error">{o.error}</p>}
                  {o?.content !== undefined && <div class="text summary">{o.content}</div>}
                  {o?.expanded !== undefined && (
                    <ol class="conversation nested">
                      {o.expanded.items.map((it) => (
                        <li key={it.id} class={`msg ${it.kind === "message" ? it.message.role : "summary"}`}>
                          <div class="msg-head"><strong>{it.kind === "message" ? it.message.role : `summary ${it.id}`}</strong> <span class="muted">{it.id}</span></div>
                          {it.kind === "message" ? <Blocks message={it.message} /> : <div class="text">{it.content}</div>}
                        </li>
                      ))}
                    </ol>
                  )}
                </li>
              )
            })}
          </ul>
        )
      }
    </Show>
  )
}

/** A snippet with its matches (between « and ») marked. */
export const Highlighted = (props: { readonly text: string }) => {
  const parts = props.text.split(/«|»/)
  return <>{parts.map((p, i) => (i % 2 === 1 ? <mark key={i}>{p}</mark> : p))}</>
}

const Search = () => {
  const [q, setQ] = useState("")
  const [query, setQuery] = useState("")
  // The memory tool's own calls and results are left out unless asked for (README: Search syntax).
  const [memoryCalls, setMemoryCalls] = useState(false)
  // Search by meaning too with an agent's embedding model (the agents that have one; admins only list agents).
  const [agent, setAgent] = useState("")
  const agents = useLoad(() => call((c) => c.agents.list()).catch(() => []), [])
  const dense = agents.data?.filter((a) => a.embeddingModel !== null) ?? []
  const results = useLoad(
    () =>
      query === ""
        ? Promise.resolve(undefined)
        : call((c) => c.sessions.search({ query: { q: query, limit: 50, includeMemoryCalls: memoryCalls, ...(agent === "" ? {} : { agent }) } })),
    [query, memoryCalls, agent]
  )
  return (
    <Page title="Search memory">
      <p><a href={href("sessions")}>← All sessions</a></p>
      <form
        class="filters"
        aria-label="Search memory"
        onSubmit={(e) => {
          e.preventDefault()
          setQuery(q.trim())
        }}
      >
        <Field label="Search" hint='Words, "phrases", prefix*, AND/OR/NOT, role:user, tool:bash'>
          {(id) => <input id={id} type="search" name="q" value={q} onInput={(e) => setQ(e.currentTarget.value)} />}
        </Field>
        <label class="choice">
          <input type="checkbox" name="includeMemoryCalls" checked={memoryCalls} onChange={(e) => setMemoryCalls(e.currentTarget.checked)} />{" "}
          Include the memory tool's own calls
        </label>
        {dense.length > 0 && (
          <Field label="By meaning too" hint="An agent's embedding model finds turns that share no word with the query">
            {(id) => (
              <select id={id} name="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
                <option value="">Words only</option>
                {dense.map((a) => <option key={a.id} value={a.id}>{a.id} ({a.embeddingModel})</option>)}
              </select>
            )}
          </Field>
        )}
        <button type="submit" class="primary">Search</button>
      </form>
      {query !== "" && (
        <Show loaded={results}>
          {(r) =>
            r === undefined ? null : r.hits.length === 0 ? (
              <p class="muted" role="status">Nothing found.</p>
            ) : (
              <ol class="hits" aria-label="Results">
                {r.hits.map((h) => (
                  <li key={`${h.kind}${h.id}`}>
                    <div class="msg-head">
                      <a href={href("sessions", h.sessionKey)} onClick={(e) => { e.preventDefault(); navigate(`sessions/${encodeURIComponent(h.sessionKey)}`) }}>{h.sessionKey}</a>{" "}
                      <span class="muted">
                        {h.kind} {h.id}{h.role !== undefined ? ` (${h.role})` : ""} · {formatTime(h.createdAt)}
                        {h.similarity !== undefined && h.matched.length === 0 ? ` · by meaning (${h.similarity.toFixed(2)})` : ""}
                        {h.hop !== undefined ? ` · through the first hit's words: ${h.hop.join(", ")}` : ""}
                      </span>
                    </div>
                    <p class="snippet"><Highlighted text={h.snippet} /></p>
                  </li>
                ))}
              </ol>
            )
          }
        </Show>
      )}
    </Page>
  )
}
