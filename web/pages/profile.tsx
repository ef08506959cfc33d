import { useState } from "preact/hooks"
import { call, setCsrfToken } from "../api.ts"
import { me } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, useAction, useLoad } from "../ui.tsx"

/** Your profile: who you are, your password, your browser sessions. */
export const Profile = () => {
  const user = me.value?.user ?? ""
  const profile = useLoad(() => call((c) => c.users.get({ params: { id: user } })), [user])
  const sessions = useLoad(() => call((c) => c.auth.sessions()))
  const action = useAction()
  const [current, setCurrent] = useState("")
  const [next, setNext] = useState("")
  const change = async (e: Event) => {
    e.preventDefault()
    const r = await action.run(() => call((c) => c.auth.changePassword({ payload: { currentPassword: current, newPassword: next } })), "Password changed.")
    setCurrent("")
    setNext("")
    if (r !== undefined) {
      setCsrfToken(r.csrfToken)
      sessions.reload()
    }
  }
  const revoke = async (id: string) => {
    await action.run(() => call((c) => c.auth.revokeSession({ params: { id } })), "Session ended.")
    sessions.reload()
  }
  return (
    <Page title="Profile">
      <Notice error={action.error} done={action.done} />
      <Show loaded={profile}>
        {(u) => (
          <dl class="facts">
            <div><dt>User</dt><dd>{u.id}</dd></div>
            <div><dt>Name</dt><dd>{u.name}</dd></div>
            <div><dt>Role</dt><dd>{u.role ?? "—"}</dd></div>
            <div><dt>Identities</dt><dd>{u.identities.map((i) => `${i.platform}:${i.externalId}`).join(", ") || "—"}</dd></div>
            <div><dt>Attributes</dt><dd>{Object.entries(u.attributes).map(([k, v]) => `${k}=${v}`).join(", ") || "—"}</dd></div>
          </dl>
        )}
      </Show>
      <form class="card" onSubmit={(e) => void change(e)} aria-labelledby="pw">
        <h2 id="pw">Change password</h2>
        <div class="grid">
          <Field label="Current password">{(id) => <input id={id} type="password" autocomplete="current-password" required value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />}</Field>
          <Field label="New password" hint="At least 8 characters">{(id) => <input id={id} type="password" autocomplete="new-password" minLength={8} required value={next} onInput={(e) => setNext(e.currentTarget.value)} />}</Field>
        </div>
        <button type="submit" class="primary" disabled={action.busy}>Change password</button>
      </form>
      <h2>Browser sessions</h2>
      <Show loaded={sessions}>
        {(ss) => (
          <div class="table-wrap">
            <table>
              <thead><tr><th scope="col">Client</th><th scope="col">Since</th><th scope="col">Last seen</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {ss.map((s) => (
                  <tr key={s.id}>
                    <th scope="row" class="wrap">{s.client || "unknown"}{s.current && <span class="badge">this one</span>}</th>
                    <td>{formatTime(s.createdAt)}</td>
                    <td>{formatTime(s.lastSeenAt)}</td>
                    <td>{formatTime(s.expiresAt)}</td>
                    <td>{!s.current && <button type="button" class="small" onClick={() => void revoke(s.id)}>End</button>}</td>
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
