import { call } from "../api.ts"
import { Field, Notice, Page, Show, useAction, useLoad } from "../ui.tsx"

/** Group chats bound to an agent (answered by it instead of the routing rules). */
export const Bindings = () => {
  const list = useLoad(() => call((c) => c.bindings.list()))
  const agents = useLoad(() => call((c) => c.agents.list()))
  const action = useAction()
  const bind = async (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    const r = await action.run(
      () => call((c) => c.bindings.bind({ params: { platform: f["platform"] ?? "", chatId: (f["chatId"] ?? "").trim() }, payload: { agentId: f["agentId"] ?? "" } })),
      "Bound."
    )
    if (r !== undefined) {
      form.reset()
      list.reload()
    }
  }
  const unbind = async (platform: string, chatId: string) => {
    await action.run(() => call((c) => c.bindings.unbind({ params: { platform, chatId } })), "Unbound.")
    list.reload()
  }
  return (
    <Page title="Bindings">
      <Notice error={action.error} done={action.done} />
      <Show loaded={list}>
        {(bs) =>
          bs.length === 0 ? <p class="muted">No group chat is bound: they follow the routing rules.</p> : (
            <div class="table-wrap">
              <table>
                <thead><tr><th scope="col">Platform</th><th scope="col">Chat</th><th scope="col">Agent</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {bs.map((b) => (
                    <tr key={`${b.platform}:${b.chatId}`}>
                      <td>{b.platform}</td>
                      <th scope="row"><code>{b.chatId}</code></th>
                      <td>{b.agentId}{!b.agentEnabled && <span class="badge">disabled</span>}</td>
                      <td><button type="button" class="small" onClick={() => void unbind(b.platform, b.chatId)} aria-label={`Unbind ${b.platform} ${b.chatId}`}>Unbind</button></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      <form class="card" onSubmit={(e) => void bind(e)} aria-labelledby="bind">
        <h2 id="bind">Bind a group chat</h2>
        <div class="grid">
          <Field label="Platform">
            {(id) => (
              <select id={id} name="platform">
                {["telegram", "qq", "feishu", "wechat"].map((p) => <option key={p} value={p}>{p}</option>)}
              </select>
            )}
          </Field>
          <Field label="Chat id">{(id) => <input id={id} name="chatId" required />}</Field>
          <Field label="Agent">
            {(id) => (
              <select id={id} name="agentId" required>
                {(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.id}</option>)}
              </select>
            )}
          </Field>
        </div>
        <button type="submit" class="primary" disabled={action.busy}>Bind</button>
      </form>
    </Page>
  )
}
