import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { href, navigate } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, useAction, useLoad } from "../ui.tsx"

/** Users: the list, adding one (with a console password or not), and one user's page. */
export const Users = (props: { readonly args: ReadonlyArray<string> }) => (props.args[0] === undefined ? <UserList /> : <UserView id={props.args[0]} />)

const UserList = () => {
  const list = useLoad(() => call((c) => c.users.list()))
  const agents = useLoad(() => call((c) => c.agents.list()))
  const action = useAction()
  const add = async (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    const id = (f["id"] ?? "").trim()
    const password = f["password"] ?? ""
    const created = await action.run(
      () =>
        call((c) =>
          c.users.create({
            payload: {
              id,
              ...((f["name"] ?? "").trim() !== "" ? { name: (f["name"] ?? "").trim() } : {}),
              ...((f["defaultAgentId"] ?? "") !== "" ? { defaultAgentId: f["defaultAgentId"] ?? "" } : {}),
              ...(password !== "" ? { password, role: (f["role"] ?? "user") as "admin" | "user" } : {})
            }
          })
        ),
      `User ${id} added.`
    )
    if (created !== undefined) {
      form.reset()
      list.reload()
    }
  }
  return (
    <Page title="Users">
      <Notice error={action.error} done={action.done} />
      <Show loaded={list}>
        {(users) => (
          <div class="table-wrap">
            <table>
              <caption class="sr-only">Users</caption>
              <thead>
                <tr><th scope="col">User</th><th scope="col">Console role</th><th scope="col">Identities</th><th scope="col">Attributes</th><th scope="col">Default agent</th></tr>
              </thead>
              <tbody>
                {users.map((u) => (
                  <tr key={u.id}>
                    <th scope="row"><a href={href("users", u.id)}>{u.name !== "" && u.name !== u.id ? `${u.name} (${u.id})` : u.id}</a></th>
                    <td>{u.role ?? "no login"}</td>
                    <td class="wrap">{u.identities.map((i) => `${i.platform}:${i.externalId}`).join(", ") || "—"}</td>
                    <td class="wrap">{Object.entries(u.attributes).map(([k, v]) => `${k}=${v}`).join(", ") || "—"}</td>
                    <td>{u.defaultAgentId ?? "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Show>
      <form class="card" onSubmit={(e) => void add(e)} aria-labelledby="add-user">
        <h2 id="add-user">Add a user</h2>
        <div class="grid">
          <Field label="Id" hint="Also the login name">{(id) => <input id={id} name="id" required pattern="[A-Za-z0-9._@\-]+" autocomplete="off" />}</Field>
          <Field label="Name">{(id) => <input id={id} name="name" autocomplete="off" />}</Field>
          <Field label="Password" hint="Optional: gives a console login (at least 8 characters)">{(id) => <input id={id} name="password" type="password" autocomplete="new-password" minLength={8} />}</Field>
          <Field label="Role">
            {(id) => (
              <select id={id} name="role">
                <option value="user">user</option>
                <option value="admin">admin</option>
              </select>
            )}
          </Field>
          <Field label="Default agent">
            {(id) => (
              <select id={id} name="defaultAgentId">
                <option value="">(the first open agent)</option>
                {(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.id}</option>)}
              </select>
            )}
          </Field>
        </div>
        <button type="submit" class="primary" disabled={action.busy}>Add user</button>
      </form>
    </Page>
  )
}

const UserView = (props: { readonly id: string }) => {
  const id = props.id
  const user = useLoad(() => call((c) => c.users.get({ params: { id } })), [id])
  const agents = useLoad(() => call((c) => c.agents.list()))
  const tokens = useLoad(() => call((c) => c.tokens.list({ query: { user: id } })), [id])
  const action = useAction()
  const [attrKey, setAttrKey] = useState("")
  const [attrValue, setAttrValue] = useState("")
  const [password, setPassword] = useState("")
  const [idPlatform, setIdPlatform] = useState("telegram")
  const [idExternal, setIdExternal] = useState("")
  const link = async (e: Event) => {
    e.preventDefault()
    const platform = idPlatform.trim()
    const externalId = idExternal.trim()
    const r = await action.run(() => call((c) => c.users.linkIdentity({ params: { id }, payload: { platform, externalId } })), `${platform}:${externalId} linked.`)
    if (r !== undefined) {
      setIdExternal("")
      user.reload()
    }
  }
  const unlink = async (platform: string, externalId: string) => {
    if (!confirm(`Unlink ${platform}:${externalId} from ${id}? Its next message makes a new user.`)) return
    const r = await action.run(() => call((c) => c.users.unlinkIdentity({ params: { id, platform, externalId } })), `${platform}:${externalId} unlinked.`)
    if (r !== undefined) user.reload()
  }
  const update = async (payload: Parameters<typeof updateUser>[1], done: string) => {
    const r = await action.run(() => updateUser(id, payload), done)
    if (r !== undefined) user.reload()
  }
  const setRole = async (role: "admin" | "user") => {
    const r = await action.run(() => call((c) => c.users.setRole({ params: { id }, payload: { role } })), `Role set to ${role}.`)
    if (r !== undefined) user.reload()
  }
  const setPw = async (e: Event) => {
    e.preventDefault()
    const r = await action.run(() => call((c) => c.users.setPassword({ params: { id }, payload: { password } })), "Password set.")
    setPassword("")
    if (r !== undefined) user.reload()
  }
  // As `anna user remove`: nothing of theirs is left to a later user of the same id; the operator
  // chooses whether their sessions are kept (under the id they are removed as) or deleted.
  const remove = async (sessions: "keep" | "delete") => {
    const question = sessions === "keep"
      ? `Remove user ${id}? Their logins, tokens, scheduled jobs, own playbook rules and workspace files go. Their sessions are kept under the id they are removed as, for operators to read.`
      : `Remove user ${id} and delete their sessions for good? Their logins, tokens, scheduled jobs, own playbook rules, workspace files, sessions, profiles and diary go. This cannot be undone.`
    if (!confirm(question)) return
    const r = await action.run(() => call((c) => c.users.remove({ params: { id }, query: { sessions } })))
    if (r !== undefined) navigate("users")
  }
  return (
    <Page title={`User ${id}`} actions={
      <div class="actions">
        <button type="button" class="danger" onClick={() => void remove("keep")}>Remove</button>
        <button type="button" class="danger" onClick={() => void remove("delete")}>Remove and delete sessions</button>
      </div>
    }>
      <p><a href={href("users")}>← All users</a></p>
      <Notice error={action.error} done={action.done} />
      <Show loaded={user}>
        {(u) => (
          <>
            <dl class="facts">
              <div><dt>Name</dt><dd>{u.name}</dd></div>
              <div><dt>Console role</dt><dd>{u.role ?? "no login"}</dd></div>
              <div><dt>Created</dt><dd>{formatTime(u.createdAt)}</dd></div>
            </dl>
            <section class="card" aria-labelledby="u-agent">
              <h2 id="u-agent">Default agent and role</h2>
              <div class="grid">
                <Field label="Default agent">
                  {(fid) => (
                    <select id={fid} value={u.defaultAgentId ?? ""} onChange={(e) => void update({ defaultAgentId: e.currentTarget.value === "" ? null : e.currentTarget.value }, "Default agent saved.")}>
                      <option value="">(the first open agent)</option>
                      {(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.id}</option>)}
                    </select>
                  )}
                </Field>
                <Field label="Console role">
                  {(fid) => (
                    <select id={fid} value={u.role ?? ""} onChange={(e) => void setRole(e.currentTarget.value as "admin" | "user")} disabled={u.role === null}>
                      {u.role === null && <option value="">no login (set a password first)</option>}
                      <option value="user">user</option>
                      <option value="admin">admin</option>
                    </select>
                  )}
                </Field>
              </div>
            </section>
            <section class="card" aria-labelledby="u-attrs">
              <h2 id="u-attrs">Attributes</h2>
              <p class="muted">Agents' access policies can match them (e.g. <code>team=ops</code>).</p>
              <ul class="plain">
                {Object.entries(u.attributes).map(([k, v]) => (
                  <li key={k}>
                    <code>{k}={v}</code>{" "}
                    <button type="button" class="small" onClick={() => void update({ attributes: { [k]: null } }, `Attribute ${k} removed.`)} aria-label={`Remove attribute ${k}`}>Remove</button>
                  </li>
                ))}
              </ul>
              <form
                class="inline"
                onSubmit={(e) => {
                  e.preventDefault()
                  void update({ attributes: { [attrKey.trim()]: attrValue } }, `Attribute ${attrKey.trim()} set.`).then(() => {
                    setAttrKey("")
                    setAttrValue("")
                  })
                }}
              >
                <Field label="Key">{(fid) => <input id={fid} required value={attrKey} onInput={(e) => setAttrKey(e.currentTarget.value)} />}</Field>
                <Field label="Value">{(fid) => <input id={fid} required value={attrValue} onInput={(e) => setAttrValue(e.currentTarget.value)} />}</Field>
                <button type="submit">Set attribute</button>
              </form>
            </section>
            <section class="card" aria-labelledby="u-ids">
              <h2 id="u-ids">Identities</h2>
              {u.identities.length === 0 ? (
                <p class="muted">None yet: an identity is added when the user first writes on a channel, or linked here.</p>
              ) : (
                <ul class="plain">
                  {u.identities.map((i) => (
                    <li key={`${i.platform}:${i.externalId}`}>
                      <code>{i.platform}:{i.externalId}</code> <span class="muted">last seen {formatTime(i.lastSeenAt)}</span>{" "}
                      <button type="button" class="small" onClick={() => void unlink(i.platform, i.externalId)} aria-label={`Unlink ${i.platform}:${i.externalId}`}>Unlink</button>
                    </li>
                  ))}
                </ul>
              )}
              <p class="muted">Link an app's account to this user (one person on several apps is one user, with one memory).</p>
              <form class="inline" onSubmit={(e) => void link(e)}>
                <Field label="Platform">{(fid) => <input id={fid} required value={idPlatform} onInput={(e) => setIdPlatform(e.currentTarget.value)} />}</Field>
                <Field label="Platform user id">{(fid) => <input id={fid} required value={idExternal} onInput={(e) => setIdExternal(e.currentTarget.value)} />}</Field>
                <button type="submit">Link identity</button>
              </form>
            </section>
            <section class="card" aria-labelledby="u-pw">
              <h2 id="u-pw">Console password</h2>
              <form class="inline" onSubmit={(e) => void setPw(e)}>
                <Field label="New password" hint={u.role === null ? "Creates a console login with role user" : "Ends their browser sessions"}>
                  {(fid) => <input id={fid} type="password" autocomplete="new-password" minLength={8} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />}
                </Field>
                <button type="submit">Set password</button>
              </form>
            </section>
            <section class="card" aria-labelledby="u-tokens">
              <h2 id="u-tokens">API tokens</h2>
              <Show loaded={tokens}>
                {(ts) =>
                  ts.length === 0 ? <p class="muted">No token.</p> : (
                    <ul class="plain">{ts.map((t) => <li key={t.id}><code>{t.id}</code> {t.label} <span class="muted">{formatTime(t.createdAt)}</span></li>)}</ul>
                  )
                }
              </Show>
              <p><a href={href("tokens")}>Manage tokens</a></p>
            </section>
          </>
        )}
      </Show>
    </Page>
  )
}

const updateUser = (id: string, payload: { readonly defaultAgentId?: string | null; readonly attributes?: Record<string, string | null>; readonly name?: string }) =>
  call((c) => c.users.update({ params: { id }, payload }))
