import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { isAdmin, me } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, useAction, useLoad } from "../ui.tsx"

/** API tokens: yours (an admin may pick a user), issue one (shown once), revoke. */
export const Tokens = () => {
  const [user, setUser] = useState("")
  const list = useLoad(() => call((c) => c.tokens.list({ query: isAdmin.value && user.trim() !== "" ? { user: user.trim() } : {} })), [user])
  const action = useAction()
  const [issued, setIssued] = useState<string | undefined>(undefined)
  const issue = async (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    const t = await action.run(() =>
      call((c) =>
        c.tokens.issue({
          payload: {
            ...((f["label"] ?? "") !== "" ? { label: f["label"] ?? "" } : {}),
            ...(isAdmin.value && (f["userId"] ?? "").trim() !== "" ? { userId: (f["userId"] ?? "").trim() } : {}),
            ...(isAdmin.value ? { role: (f["role"] ?? "user") as "admin" | "user" } : {})
          }
        })
      )
    )
    if (t !== undefined) {
      setIssued(t.token)
      form.reset()
      list.reload()
    }
  }
  const revoke = async (id: string) => {
    if (!confirm("Revoke this token? Scripts using it stop working.")) return
    await action.run(() => call((c) => c.tokens.revoke({ params: { id } })), "Token revoked.")
    list.reload()
  }
  return (
    <Page title="API tokens">
      <p class="muted">Tokens authenticate scripts (<code>Authorization: Bearer …</code>) on the admin API and the OpenAI-compatible endpoint.</p>
      <Notice error={action.error} done={action.done} />
      {issued !== undefined && (
        <div class="notice ok" role="status">
          <p>The new token, shown this once (copy it now):</p>
          <p><output class="secret-once"><code>{issued}</code></output></p>
          <div class="actions">
            <button type="button" class="small" onClick={() => void navigator.clipboard?.writeText(issued)}>Copy</button>
            <button type="button" class="small" onClick={() => setIssued(undefined)}>Done, hide it</button>
          </div>
        </div>
      )}
      {isAdmin.value && (
        <Field label="Show the tokens of user">{(id) => <input id={id} defaultValue={user} placeholder={me.value?.user ?? ""} onChange={(e) => setUser(e.currentTarget.value)} />}</Field>
      )}
      <Show loaded={list}>
        {(ts) =>
          ts.length === 0 ? <p class="muted">No token.</p> : (
            <div class="table-wrap">
              <table>
                <thead><tr><th scope="col">Id</th><th scope="col">User</th><th scope="col">Label</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {ts.map((t) => (
                    <tr key={t.id}>
                      <th scope="row"><code>{t.id}</code></th>
                      <td>{t.userId}</td>
                      <td>{t.label}</td>
                      <td>{formatTime(t.createdAt)}</td>
                      <td><button type="button" class="danger small" onClick={() => void revoke(t.id)} aria-label={`Revoke token ${t.label || t.id}`}>Revoke</button></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      <form class="card" onSubmit={(e) => void issue(e)} aria-labelledby="issue-token">
        <h2 id="issue-token">Issue a token</h2>
        <div class="grid">
          <Field label="Label">{(id) => <input id={id} name="label" placeholder="e.g. backup script" />}</Field>
          {isAdmin.value && <Field label="For user" hint="Empty: you">{(id) => <input id={id} name="userId" />}</Field>}
          {isAdmin.value && (
            <Field label="Role">
              {(id) => (
                <select id={id} name="role">
                  <option value="user">user</option>
                  <option value="admin">admin</option>
                </select>
              )}
            </Field>
          )}
        </div>
        <button type="submit" class="primary" disabled={action.busy}>Issue token</button>
      </form>
    </Page>
  )
}
