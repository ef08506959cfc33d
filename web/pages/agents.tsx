import { useEffect, useState } from "preact/hooks"
import { call } from "../api.ts"
import { href, navigate } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, splitList, useAction, useLoad } from "../ui.tsx"

type Agent = Awaited<ReturnType<typeof loadAgents>>[number]
const loadAgents = () => call((c) => c.agents.list())

/** An access policy as the form edits it (`everyone | users:ID,… | attr:KEY=VALUE,…`). */
type AccessKind = "everyone" | "users" | "attr"
const parseAccess = (access: string): { kind: AccessKind; value: string } =>
  access.startsWith("users:") ? { kind: "users", value: access.slice(6) } : access.startsWith("attr:") ? { kind: "attr", value: access.slice(5) } : { kind: "everyone", value: "" }
const showAccess = (access: string) => {
  const a = parseAccess(access)
  return a.kind === "everyone" ? "everyone" : a.kind === "users" ? `users ${a.value.split(",").join(", ")}` : `users with ${a.value}`
}

/** Agents: the list, and one agent's settings (a new one with `#/agents/new`). */
export const Agents = (props: { readonly args: ReadonlyArray<string> }) => {
  const id = props.args[0]
  return id === undefined ? <AgentList /> : <AgentForm id={id} />
}

const AgentList = () => {
  const list = useLoad(loadAgents)
  return (
    <Page title="Agents" actions={<a class="button primary" href={href("agents", "new")}>New agent</a>}>
      <Show loaded={list}>
        {(agents) => (
          <div class="table-wrap">
            <table>
              <caption class="sr-only">Agents</caption>
              <thead>
                <tr><th scope="col">Agent</th><th scope="col">Model</th><th scope="col">Access</th><th scope="col">State</th><th scope="col">Changed</th></tr>
              </thead>
              <tbody>
                {agents.map((a) => (
                  <tr key={a.id}>
                    <th scope="row"><a href={href("agents", a.id)}>{a.name !== "" && a.name !== a.id ? `${a.name} (${a.id})` : a.id}</a></th>
                    <td>{a.model ?? "—"}</td>
                    <td>{showAccess(a.access)}</td>
                    <td>{a.enabled ? "enabled" : a.awaitingModel ? "awaiting a model" : "disabled"}</td>
                    <td>{formatTime(a.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Show>
    </Page>
  )
}

const num = (s: string | undefined) => (s === undefined || s.trim() === "" ? undefined : Number(s))

const AgentForm = (props: { readonly id: string }) => {
  const isNew = props.id === "new"
  const agent = useLoad(() => (isNew ? Promise.resolve(undefined) : call((c) => c.agents.get({ params: { id: props.id } }))), [props.id])
  const providers = useLoad(() => call((c) => c.providers.list()))
  const users = useLoad(() => call((c) => c.users.list()))
  const action = useAction()
  const a = agent.data
  const [access, setAccess] = useState<{ kind: AccessKind; value: string }>({ kind: "everyone", value: "" })
  useEffect(() => {
    if (a !== undefined) setAccess(parseAccess(a.access))
  }, [a])
  const models = (providers.data ?? []).flatMap((p) => [p.id, ...p.models.map((m) => `${p.id}/${m}`), `${p.id}/${p.defaultModel}`])
  const accessValue = access.kind === "everyone" ? "everyone" : `${access.kind}:${splitList(access.value).join(",")}`
  const selectedUsers = new Set(access.kind === "users" ? splitList(access.value) : [])
  const toggleUser = (u: string, on: boolean) => {
    const next = new Set(selectedUsers)
    if (on) next.add(u)
    else next.delete(u)
    setAccess({ kind: "users", value: [...next].join(",") })
  }

  const save = async (e: Event) => {
    e.preventDefault()
    const f = Object.fromEntries(new FormData(e.currentTarget as HTMLFormElement).entries()) as Record<string, string>
    const id = isNew ? (f["id"] ?? "").trim() : props.id
    const tools = (f["tools"] ?? "").trim()
    const changes = {
      name: f["name"] ?? "",
      systemPrompt: f["systemPrompt"] ?? "",
      ...((f["model"] ?? "").trim() !== "" ? { model: (f["model"] ?? "").trim() } : {}),
      summaryModel: (f["summaryModel"] ?? "").trim() === "" ? null : (f["summaryModel"] ?? "").trim(),
      embeddingModel: (f["embeddingModel"] ?? "").trim() === "" ? null : (f["embeddingModel"] ?? "").trim(),
      tools: tools === "" || tools === "*" ? null : splitList(tools),
      allowedModels: splitList(f["allowedModels"]),
      access: accessValue,
      sandboxWorkspace: (f["sandboxWorkspace"] ?? "user") as "user" | "shared",
      sandboxNetwork: (f["sandboxNetwork"] ?? "disabled") as "disabled" | "allow_all",
      ...(f["sandboxImage"] !== undefined && f["sandboxImage"].trim() !== "" ? { sandboxImage: f["sandboxImage"].trim() } : {}),
      ...Object.fromEntries(
        (["maxTurns", "turnTimeoutSeconds", "contextTokens", "maxOutputTokens", "summaryMaxCalls", "sandboxMemoryMb", "sandboxCpus"] as const)
          .map((k) => [k, num(f[k])] as const)
          .filter(([, v]) => v !== undefined && !Number.isNaN(v))
      )
    }
    const saved = await action.run(() => call((c) => c.agents.set({ params: { id }, payload: changes })), `Agent ${id} saved.`)
    if (saved === undefined) return
    if (isNew) navigate(`agents/${encodeURIComponent(saved.id)}`)
    else agent.reload()
  }
  const toggle = async (on: boolean) => {
    await action.run(() => call((c) => (on ? c.agents.enable({ params: { id: props.id } }) : c.agents.disable({ params: { id: props.id } }))), on ? "Enabled." : "Disabled.")
    agent.reload()
  }
  const remove = async () => {
    if (!confirm(`Remove agent ${props.id}?`)) return
    const r = await action.run(() => call((c) => c.agents.remove({ params: { id: props.id } })))
    if (r !== undefined) navigate("agents")
  }
  if (!isNew && a === undefined) return <Page title={`Agent ${props.id}`}><Show loaded={agent}>{() => null}</Show></Page>
  return (
    <Page
      title={isNew ? "New agent" : `Agent ${a?.name !== undefined && a.name !== "" ? a.name : props.id}`}
      actions={
        !isNew && a !== undefined ? (
          <div class="actions">
            <button type="button" onClick={() => void toggle(!a.enabled)}>{a.enabled ? "Disable" : "Enable"}</button>
            <button type="button" class="danger" onClick={() => void remove()}>Remove</button>
          </div>
        ) : undefined
      }
    >
      <p><a href={href("agents")}>← All agents</a>{a !== undefined && <> · {a.enabled ? "enabled" : a.awaitingModel ? "disabled until it has a model" : "disabled"}</>}</p>
      <Notice error={action.error} done={action.done} />
      {/* Uncontrolled fields (defaultValue): the form is made anew for each saved version of the agent. */}
      <form class="card" onSubmit={(e) => void save(e)} key={a?.updatedAt ?? "new"}>
        <datalist id="models">{models.map((m) => <option key={m} value={m} />)}</datalist>
        <h2>Identity and model</h2>
        <div class="grid">
          {isNew && <Field label="Id" hint="Letters, digits, - and _">{(id) => <input id={id} name="id" required pattern="[A-Za-z0-9_\-]+" />}</Field>}
          <Field label="Name">{(id) => <input id={id} name="name" defaultValue={a?.name ?? ""} />}</Field>
          <Field label="Model" hint="PROVIDER/MODEL, or PROVIDER for its default">{(id) => <input id={id} name="model" list="models" defaultValue={a?.model ?? ""} required={isNew} />}</Field>
          <Field label="Allowed models" hint="Models /model may switch to besides the agent's own, comma-separated; * for any the provider lists">
            {(id) => <input id={id} name="allowedModels" defaultValue={a?.allowedModels.join(", ") ?? ""} />}
          </Field>
          <Field label="Summary model" hint="Empty: the main model summarizes">{(id) => <input id={id} name="summaryModel" list="models" defaultValue={a?.summaryModel ?? ""} />}</Field>
          <Field label="Embedding model" hint="PROVIDER/MODEL of an OpenAI-compatible /v1/embeddings for search by meaning; empty: lexical search only">
            {(id) => <input id={id} name="embeddingModel" defaultValue={a?.embeddingModel ?? ""} />}
          </Field>
        </div>
        <h2>Budget and limits</h2>
        <div class="grid">
          <Field label="Context window (tokens)" hint="0 = default (128,000)">{(id) => <input id={id} name="contextTokens" type="number" min="0" defaultValue={a?.contextTokens ?? ""} />}</Field>
          <Field label="Max output tokens">{(id) => <input id={id} name="maxOutputTokens" type="number" min="0" defaultValue={a?.maxOutputTokens ?? ""} />}</Field>
          <Field label="Turn limit (model calls per turn)">{(id) => <input id={id} name="maxTurns" type="number" min="1" defaultValue={a?.maxTurns ?? ""} />}</Field>
          <Field label="Turn timeout (seconds)">{(id) => <input id={id} name="turnTimeoutSeconds" type="number" min="1" defaultValue={a?.turnTimeoutSeconds ?? ""} />}</Field>
          <Field label="Summary calls per window">{(id) => <input id={id} name="summaryMaxCalls" type="number" min="0" defaultValue={a?.summaryMaxCalls ?? ""} />}</Field>
          <Field label="Tools" hint="Comma-separated; empty = every tool">{(id) => <input id={id} name="tools" defaultValue={a?.tools === null || a === undefined ? "" : a.tools.join(", ")} />}</Field>
        </div>
        <h2>Sandbox</h2>
        <div class="grid">
          <Field label="Image" hint="Empty: the default image">{(id) => <input id={id} name="sandboxImage" defaultValue={a?.sandboxImage ?? ""} />}</Field>
          <Field label="Network">
            {(id) => (
              <select id={id} name="sandboxNetwork">
                <option value="disabled" selected={a?.sandboxNetwork !== "allow_all"}>disabled</option>
                <option value="allow_all" selected={a?.sandboxNetwork === "allow_all"}>allow all</option>
              </select>
            )}
          </Field>
          <Field label="Workspace">
            {(id) => (
              <select id={id} name="sandboxWorkspace">
                <option value="user" selected={a?.sandboxWorkspace !== "shared"}>one per user</option>
                <option value="shared" selected={a?.sandboxWorkspace === "shared"}>shared</option>
              </select>
            )}
          </Field>
          <Field label="Memory (MB)">{(id) => <input id={id} name="sandboxMemoryMb" type="number" min="16" defaultValue={a?.sandboxMemoryMb ?? ""} />}</Field>
          <Field label="CPUs">{(id) => <input id={id} name="sandboxCpus" type="number" min="0.1" step="0.1" defaultValue={a?.sandboxCpus ?? ""} />}</Field>
        </div>
        <h2>System prompt</h2>
        <Field label="System prompt">{(id) => <textarea id={id} name="systemPrompt" rows={6} defaultValue={a?.systemPrompt ?? ""} />}</Field>
        <fieldset>
          <legend>Who may use this agent</legend>
          {(["everyone", "users", "attr"] as const).map((k) => (
            <label class="choice" key={k}>
              <input type="radio" name="accessKind" value={k} checked={access.kind === k} onChange={() => setAccess({ kind: k, value: k === access.kind ? access.value : "" })} />
              {k === "everyone" ? "Everyone" : k === "users" ? "Only these users" : "Users with these attributes"}
            </label>
          ))}
          {access.kind === "users" && (
            <fieldset class="checks">
              <legend class="sr-only">Allowed users</legend>
              {(users.data ?? []).map((u) => (
                <label class="choice" key={u.id}>
                  <input type="checkbox" name="allowedUser" value={u.id} checked={selectedUsers.has(u.id)} onChange={(e) => toggleUser(u.id, e.currentTarget.checked)} />
                  {u.name !== "" && u.name !== u.id ? `${u.name} (${u.id})` : u.id}
                </label>
              ))}
            </fieldset>
          )}
          {access.kind === "attr" && (
            <Field label="Attributes" hint="KEY=VALUE, comma-separated (all must match)">
              {(id) => <input id={id} name="accessAttr" defaultValue={access.value} onInput={(e) => setAccess({ kind: "attr", value: e.currentTarget.value })} />}
            </Field>
          )}
          <p class="muted">Policy: <code>{accessValue}</code></p>
        </fieldset>
        <button type="submit" class="primary" disabled={action.busy}>{isNew ? "Create agent" : "Save"}</button>
      </form>
    </Page>
  )
}

export type { Agent }
