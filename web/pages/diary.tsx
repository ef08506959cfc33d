/**
 * The diary (`/api/diary`): what reflection wrote after each burst of work — a filtered list, newest
 * first, a page at a time, and one entry with every field. An admin reads every entry; a user "My
 * diary", the entries of their own conversations. Entries hold model and user text: shown as text,
 * never as HTML.
 */
import { useState } from "preact/hooks"
import { DIARY_STATUSES } from "../../src/domain/learning/diary.ts"
import { call } from "../api.ts"
import { href, isAdmin } from "../state.ts"
import { Field, Page, Show, formatTime, useLoad } from "../ui.tsx"

const PAGE = 25

export const Diary = (props: { readonly args: ReadonlyArray<string> }) => {
  const id = props.args[0]
  return id === undefined ? <EntryList /> : <EntryView id={id} />
}

const EntryList = () => {
  const admin = isAdmin.value
  const [filters, setFilters] = useState({ session: "", agent: "", user: "", tag: "", status: "" })
  const [offset, setOffset] = useState(0)
  const list = useLoad(
    () =>
      call((c) =>
        c.diary.list({
          query: {
            ...(filters.session !== "" ? { session: filters.session } : {}),
            ...(filters.agent !== "" ? { agent: filters.agent } : {}),
            ...(admin && filters.user !== "" ? { user: filters.user } : {}),
            ...(filters.tag !== "" ? { tag: filters.tag } : {}),
            ...(filters.status === "success" || filters.status === "failure" || filters.status === "mixed" ? { status: filters.status } : {}),
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
    setFilters({
      session: (f["session"] ?? "").trim(),
      agent: (f["agent"] ?? "").trim(),
      user: (f["user"] ?? "").trim(),
      tag: (f["tag"] ?? "").trim(),
      status: f["status"] ?? ""
    })
  }
  return (
    <Page title={admin ? "Diary" : "My diary"}>
      <p class="muted">After each burst of work the agent reflects and writes an entry: what was asked and done, decided, struggled with and learned.</p>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <Field label="Session">{(id) => <input id={id} name="session" placeholder="agent:platform:user:chat" />}</Field>
        <Field label="Agent">{(id) => <input id={id} name="agent" />}</Field>
        {admin && <Field label="User">{(id) => <input id={id} name="user" />}</Field>}
        <Field label="Tag">{(id) => <input id={id} name="tag" />}</Field>
        <Field label="Status">
          {(id) => (
            <select id={id} name="status">
              <option value="">any</option>
              {DIARY_STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          )}
        </Field>
        <button type="submit">Filter</button>
      </form>
      <Show loaded={list}>
        {(page) => (
          <>
            {page.entries.length === 0 ? <p class="muted" role="status">No diary entry matches.</p> : (
              <div class="table-wrap">
                <table>
                  <caption class="sr-only">Diary entries, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Entry</th><th scope="col">Time</th><th scope="col">Agent</th>{admin && <th scope="col">User</th>}
                      <th scope="col">Status</th><th scope="col">Quality</th><th scope="col">Tags</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.entries.map((e) => (
                      <tr key={e.id}>
                        <th scope="row"><a href={href("diary", e.id)}>{e.accomplishments[0] ?? e.id}</a></th>
                        <td>{formatTime(e.createdAt)}</td>
                        <td>{e.agentId}</td>
                        {admin && <td>{e.userId || "—"}</td>}
                        <td>{e.status}</td>
                        <td>{e.qualityScore.toFixed(2)}</td>
                        <td>{e.tags.join(", ") || "—"}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <div class="pager">
              <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
              <button type="button" disabled={page.nextOffset === null} onClick={() => page.nextOffset !== null && setOffset(page.nextOffset)}>Older</button>
            </div>
          </>
        )}
      </Show>
    </Page>
  )
}

const Items = (props: { readonly title: string; readonly items: ReadonlyArray<string> }) => (
  <section aria-label={props.title}>
    <h2>{props.title}</h2>
    {props.items.length === 0 ? <p class="muted">None.</p> : <ul class="entry-items">{props.items.map((i, n) => <li key={n}>{i}</li>)}</ul>}
  </section>
)

const EntryView = (props: { readonly id: string }) => {
  const entry = useLoad(() => call((c) => c.diary.show({ params: { id: props.id } })), [props.id])
  return (
    <Page title="Diary entry" actions={<a class="button" href={href("diary")}>All entries</a>}>
      <Show loaded={entry}>
        {(e) => (
          <>
            <dl class="facts">
              <div><dt>Entry</dt><dd><code>{e.id}</code></dd></div>
              <div><dt>Session</dt><dd><a href={href("sessions", e.sessionKey)}><code>{e.sessionKey}</code></a></dd></div>
              <div><dt>Agent</dt><dd>{e.agentId}</dd></div>
              <div><dt>User</dt><dd>{e.userId || "—"}</dd></div>
              <div><dt>Burst</dt><dd>messages {e.fromSeq}–{e.toSeq}</dd></div>
              <div><dt>Time</dt><dd>{formatTime(e.createdAt)}</dd></div>
              <div><dt>Status</dt><dd>{e.status}</dd></div>
              <div><dt>Quality</dt><dd>{e.qualityScore.toFixed(2)}</dd></div>
              <div><dt>Written by</dt><dd>{e.source === "model" ? "the summary model" : "the heuristic (no model answered)"}</dd></div>
              <div><dt>Ended by</dt><dd>{e.trigger}</dd></div>
              <div><dt>Tags</dt><dd>{e.tags.join(", ") || "—"}</dd></div>
            </dl>
            <Items title="Accomplishments" items={e.accomplishments} />
            <Items title="Decisions" items={e.decisions} />
            <Items title="Challenges" items={e.challenges} />
            <Items title="Key learnings" items={e.keyLearnings} />
          </>
        )}
      </Show>
    </Page>
  )
}
