/**
 * MCP servers (`/api/mcp-servers`, admin only): one agent's servers — a stdio command run in the
 * agent's sandbox, or a remote URL the gateway reaches (logged as EX-009) with headers that are
 * written once and shown only by name. The list loads at once, then each server is asked whether it
 * answers and which tools it has, as `anna mcp list` does; "Test" asks one again. Every text a server
 * sent (tool names, descriptions, errors) is shown as text.
 */
import { useEffect, useState } from "preact/hooks"
import type { McpServerView } from "../../src/domain/admin/groups/mcp.ts"
import { call } from "../api.ts"
import { Field, Notice, Page, Show, useAction, useLoad } from "../ui.tsx"

type Server = typeof McpServerView.Type
type Probe = NonNullable<Server["probe"]>

/** `node a.mjs "two words"` → ["node", "a.mjs", "two words"] (double or single quotes group). */
export const splitCommand = (line: string): ReadonlyArray<string> =>
  Array.from(line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g), (m) => m[1] ?? m[2] ?? m[3] ?? "")

/** `NAME=VALUE` (or `NAME: VALUE`) per line. */
const parseHeaders = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    const at = line.search(/[=:]/)
    // A line without a separator becomes a name the server refuses, saying why.
    if (at < 0) out[line.trim()] = ""
    else out[line.slice(0, at).trim()] = line.slice(at + 1).trim()
  }
  return out
}

const target = (s: Server) => (s.transport === "stdio" ? (s.command ?? []).join(" ") : (s.url ?? ""))

const Answers = (props: { readonly probe: Probe | "asking" | undefined }) => {
  const p = props.probe
  if (p === undefined) return <span class="muted">—</span>
  if (p === "asking") return <span class="muted">asking…</span>
  if (!p.answers) return <span>no: {p.error ?? "no answer"}</span>
  return <span>yes, {p.tools.length === 1 ? "1 tool" : `${p.tools.length} tools`}</span>
}

const Tools = (props: { readonly probe: Probe | "asking" | undefined }) => {
  const p = props.probe
  if (p === undefined || p === "asking" || p.tools.length === 0) return <span class="muted">—</span>
  return (
    <details>
      <summary>{p.tools.slice(0, 5).map((t) => t.name).join(", ")}{p.tools.length > 5 ? ", …" : ""}</summary>
      <ul class="plain">
        {p.tools.map((t) => <li key={t.name}><code>{t.name}</code>{t.description === "" ? "" : `: ${t.description}`}</li>)}
      </ul>
    </details>
  )
}

export const Mcp = () => {
  const agents = useLoad(() => call((c) => c.agents.list()).then((as) => as.map((a) => a.id)))
  const [agent, setAgent] = useState("")
  // The agent shown: the one picked, else the default agent (served without a row), else the first.
  const shown = agent !== "" ? agent : (agents.data ?? []).includes("default") || (agents.data ?? []).length === 0 ? "default" : (agents.data?.[0] ?? "default")
  const list = useLoad(() => call((c) => c.mcp.list({ params: { agent: shown }, query: {} })), [shown])
  const [probes, setProbes] = useState<Readonly<Record<string, Probe | "asking">>>({})
  const action = useAction()
  const [kind, setKind] = useState<"stdio" | "remote">("stdio")
  const [removing, setRemoving] = useState<Server | undefined>(undefined)

  // Once the list is in, ask every server (as `anna mcp list`); a slow one does not hold the list.
  useEffect(() => {
    const servers = list.data
    if (servers === undefined || servers.length === 0) return
    let live = true
    setProbes(Object.fromEntries(servers.map((s) => [s.name, "asking" as const])))
    call((c) => c.mcp.list({ params: { agent: shown }, query: { probe: "true" } })).then(
      (rows) => live && setProbes(Object.fromEntries(rows.flatMap((s) => (s.probe === null ? [] : [[s.name, s.probe] as const])))),
      () => live && setProbes({})
    )
    return () => {
      live = false
    }
  }, [list.data])

  const test = async (s: Server) => {
    setProbes((p) => ({ ...p, [s.name]: "asking" }))
    const r = await action.run(() => call((c) => c.mcp.test({ params: { agent: shown, name: s.name } })))
    setProbes((p) => ({ ...p, ...(r?.probe === null || r === undefined ? {} : { [s.name]: r.probe }) }))
  }
  const remove = async (s: Server) => {
    setRemoving(undefined)
    await action.run(() => call((c) => c.mcp.remove({ params: { agent: shown, name: s.name } })), `Removed ${s.name}.`)
    list.reload()
  }
  const add = async (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    const name = (f["name"] ?? "").trim()
    const payload = kind === "stdio"
      ? { name, command: splitCommand(f["command"] ?? "") }
      : {
        name,
        url: (f["url"] ?? "").trim(),
        headers: parseHeaders(f["headers"] ?? ""),
        transport: (f["transport"] ?? "http") as "http" | "sse"
      }
    const r = await action.run(() => call((c) => c.mcp.add({ params: { agent: shown }, payload })), `Added ${name} to ${shown}.`)
    if (r !== undefined) {
      form.reset()
      list.reload()
    }
  }

  return (
    <Page title="MCP servers">
      <p class="muted">
        Tools an agent reaches through its <code>mcp</code> tool: a stdio server runs inside the agent's sandbox; a remote one is reached by
        the gateway itself (each connection logged). Header values are secrets: written once, shown by name only.
      </p>
      <Notice error={action.error} done={action.done} />
      <div class="filters">
        <Field label="Agent">
          {(id) => (
            <select id={id} value={shown} onChange={(e) => setAgent(e.currentTarget.value)}>
              {!(agents.data ?? []).includes("default") && <option value="default">default</option>}
              {(agents.data ?? []).map((a) => <option key={a} value={a}>{a}</option>)}
            </select>
          )}
        </Field>
      </div>
      {removing !== undefined && (
        <section class="card" role="alertdialog" aria-labelledby="remove-server">
          <h2 id="remove-server">Remove MCP server {removing.name} of {shown}?</h2>
          <div class="actions">
            <button type="button" class="danger" disabled={action.busy} onClick={() => void remove(removing)}>Remove</button>
            <button type="button" onClick={() => setRemoving(undefined)}>Cancel</button>
          </div>
        </section>
      )}
      <Show loaded={list}>
        {(ss) =>
          ss.length === 0 ? <p class="muted">Agent {shown} has no MCP server.</p> : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">MCP servers of {shown}</caption>
                <thead>
                  <tr>
                    <th scope="col">Server</th><th scope="col">Transport</th><th scope="col">Command or URL</th><th scope="col">Answers</th>
                    <th scope="col">Tools</th><th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {ss.map((s) => (
                    <tr key={s.name}>
                      <th scope="row">{s.name}</th>
                      <td>{s.transport}</td>
                      <td class="wrap">
                        <code>{target(s)}</code>
                        {Object.keys(s.headers).length > 0 && <span class="muted"> (headers: {Object.keys(s.headers).join(", ")})</span>}
                      </td>
                      <td class="wrap"><Answers probe={probes[s.name]} /></td>
                      <td class="wrap"><Tools probe={probes[s.name]} /></td>
                      <td>
                        <div class="actions">
                          <button type="button" class="small" disabled={probes[s.name] === "asking"} onClick={() => void test(s)} aria-label={`Test ${s.name}`}>Test</button>
                          <button type="button" class="small danger" onClick={() => setRemoving(s)} aria-label={`Remove ${s.name}`}>Remove</button>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      <form class="card" onSubmit={(e) => void add(e)} aria-labelledby="add-server">
        <h2 id="add-server">Add a server to {shown}</h2>
        <fieldset>
          <legend>Kind</legend>
          <label class="choice">
            <input type="radio" name="kind" value="stdio" checked={kind === "stdio"} onChange={() => setKind("stdio")} />
            A command (stdio), run in the agent's sandbox
          </label>
          <label class="choice">
            <input type="radio" name="kind" value="remote" checked={kind === "remote"} onChange={() => setKind("remote")} />
            A remote server (URL)
          </label>
        </fieldset>
        <div class="grid">
          <Field label="Name" hint="a-z, 0-9, _ and -; at most 32">{(id) => <input id={id} name="name" required />}</Field>
          {kind === "stdio" ? (
            <Field label="Command" hint="As in a shell, e.g. node /workspace/.mcp/server.mjs stdio">{(id) => <input id={id} name="command" required />}</Field>
          ) : (
            <>
              <Field label="URL">{(id) => <input id={id} name="url" type="url" required placeholder="https://mcp.example.com/mcp" />}</Field>
              <Field label="Transport">
                {(id) => (
                  <select id={id} name="transport">
                    <option value="http">Streamable HTTP (falls back to SSE)</option>
                    <option value="sse">SSE</option>
                  </select>
                )}
              </Field>
            </>
          )}
        </div>
        {kind === "remote" && (
          <Field label="Headers" hint="NAME=VALUE, one per line; secrets, never shown again">
            {(id) => <textarea id={id} name="headers" rows={2} autocomplete="off" />}
          </Field>
        )}
        <button type="submit" class="primary" disabled={action.busy}>Add server</button>
      </form>
    </Page>
  )
}
