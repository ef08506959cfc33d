import { call } from "../api.ts"
import { Notice, Page, Show, useAction, useLoad } from "../ui.tsx"

/** Plugins, enabled or not (exactly one memory plugin is on). */
export const Plugins = () => {
  const list = useLoad(() => call((c) => c.plugins.list()))
  const action = useAction()
  const toggle = async (id: string, on: boolean) => {
    const r = await action.run(() => call((c) => (on ? c.plugins.enable({ payload: { id } }) : c.plugins.disable({ payload: { id } }))))
    if (r !== undefined) list.reload()
  }
  return (
    <Page title="Plugins">
      <Notice error={action.error} />
      <Show loaded={list}>
        {(ps) => (
          <div class="table-wrap">
            <table>
              <thead><tr><th scope="col">Plugin</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Settings</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {ps.map((p) => (
                  <tr key={p.id}>
                    <th scope="row"><code>{p.id}</code></th>
                    <td>{p.kind}</td>
                    <td>{p.enabled ? "enabled" : "disabled"}</td>
                    <td class="wrap"><code>{Object.keys(p.config).length === 0 ? "—" : JSON.stringify(p.config)}</code></td>
                    <td><button type="button" class="small" onClick={() => void toggle(p.id, !p.enabled)} aria-label={`${p.enabled ? "Disable" : "Enable"} ${p.id}`}>{p.enabled ? "Disable" : "Enable"}</button></td>
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
