import { useState } from "preact/hooks"
import type { TokenView } from "../../src/domain/admin/groups/tokens.ts"
import { call } from "../api.ts"
import { isAdmin, me } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, useAction, useLoad } from "../ui.tsx"

type TokenRow = typeof TokenView.Type

const tokensMinted = (n: number) => (n === 1 ? "the token it minted" : `the ${n} tokens it minted`)

/**
 * Asks before revoking a token; when the token minted others (a script's token that made more, or a
 * stolen one), offers to revoke them too, saying how many.
 */
const ConfirmRevoke = (props: { readonly token: TokenRow; readonly busy: boolean; readonly onRevoke: (cascade: boolean) => void; readonly onCancel: () => void }) => {
  const [cascade, setCascade] = useState(false)
  const t = props.token
  return (
    <section class="card" role="alertdialog" aria-labelledby="revoke-title" aria-describedby="revoke-what">
      <h2 id="revoke-title">Revoke token {t.label || t.id}?</h2>
      <p id="revoke-what">Scripts using it stop working at once.</p>
      {t.minted > 0 && (
        <label class="choice">
          <input type="checkbox" checked={cascade} onChange={(e) => setCascade(e.currentTarget.checked)} />
          Also revoke {tokensMinted(t.minted)} (directly or through others)
        </label>
      )}
      <div class="actions">
        <button type="button" class="danger" disabled={props.busy} onClick={() => props.onRevoke(cascade)}>Revoke</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </section>
  )
}

/** API tokens: yours (an admin may pick a user), issue one (shown once), revoke (with what it minted, if asked). */
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
  const [pending, setPending] = useState<TokenRow | undefined>(undefined)
  const [note, setNote] = useState<string | undefined>(undefined)
  /** A token revoked alone whose minted tokens still work: offered to revoke them afterwards. */
  const [leftBehind, setLeftBehind] = useState<{ readonly id: string; readonly count: number } | undefined>(undefined)
  const revoke = async (id: string, cascade: boolean) => {
    setPending(undefined)
    setLeftBehind(undefined)
    setNote(undefined)
    const r = await action.run(() => call((c) => c.tokens.revoke({ params: { id }, query: cascade ? { cascade: "true" } : {} })))
    if (r !== undefined) {
      const n = r.cascaded.length
      setNote(
        r.revoked !== null
          ? n === 0 ? "Token revoked." : `Token revoked, with ${tokensMinted(n)}.`
          : n === 0 ? "It minted no token that still works." : `Revoked ${tokensMinted(n)}.`
      )
      if (r.remainingMinted > 0) setLeftBehind({ id, count: r.remainingMinted })
    }
    list.reload()
  }
  return (
    <Page title="API tokens">
      <p class="muted">Tokens authenticate scripts (<code>Authorization: Bearer …</code>) on the admin API and the OpenAI-compatible endpoint.</p>
      <Notice error={action.error} done={note} />
      {leftBehind !== undefined && (
        <div class="notice" role="status">
          <p>{leftBehind.count === 1 ? "1 token it minted still works." : `${leftBehind.count} tokens it minted still work.`}</p>
          <div class="actions">
            <button type="button" class="danger small" disabled={action.busy} onClick={() => void revoke(leftBehind.id, true)}>Revoke them too</button>
            <button type="button" class="small" onClick={() => setLeftBehind(undefined)}>Keep them</button>
          </div>
        </div>
      )}
      {pending !== undefined && (
        <ConfirmRevoke key={pending.id} token={pending} busy={action.busy} onRevoke={(cascade) => void revoke(pending.id, cascade)} onCancel={() => setPending(undefined)} />
      )}
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
                <thead>
                  <tr>
                    <th scope="col">Id</th><th scope="col">User</th><th scope="col">Label</th><th scope="col">Created</th>
                    <th scope="col">Minted by</th><th scope="col">Minted</th><th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {ts.map((t) => (
                    <tr key={t.id}>
                      <th scope="row"><code>{t.id}</code></th>
                      <td>{t.userId}</td>
                      <td>{t.label}</td>
                      <td>{formatTime(t.createdAt)}</td>
                      <td>{t.mintedBy === null ? "—" : <code>{t.mintedBy}</code>}</td>
                      <td>{t.minted}</td>
                      <td><button type="button" class="danger small" onClick={() => setPending(t)} aria-label={`Revoke token ${t.label || t.id}`}>Revoke</button></td>
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
