import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { Notice, Page, Show, useAction, useLoad } from "../ui.tsx"

/** Gateway-wide settings: the value in force, set or reset to the default. */
export const Settings = () => {
  const list = useLoad(() => call((c) => c.settings.list()))
  const action = useAction()
  const [edits, setEdits] = useState<Record<string, string>>({})
  const save = async (key: string) => {
    const value = edits[key]
    if (value === undefined) return
    const r = await action.run(() => call((c) => c.settings.set({ params: { key }, payload: { value } })), `${key} saved.`)
    if (r !== undefined) {
      setEdits(({ [key]: _, ...rest }) => rest)
      list.reload()
    }
  }
  const reset = async (key: string) => {
    const r = await action.run(() => call((c) => c.settings.unset({ params: { key } })), `${key} back to its default.`)
    if (r !== undefined) list.reload()
  }
  return (
    <Page title="Settings">
      <Notice error={action.error} done={action.done} />
      <Show loaded={list}>
        {(ss) => (
          <ul class="settings">
            {ss.map((s) => (
              <li key={s.key} class="card">
                <form
                  class="inline"
                  onSubmit={(e) => {
                    e.preventDefault()
                    void save(s.key)
                  }}
                >
                  <div class="field">
                    <label for={`set-${s.key}`}><code>{s.key}</code></label>
                    <input id={`set-${s.key}`} value={edits[s.key] ?? s.value} onInput={(e) => setEdits({ ...edits, [s.key]: e.currentTarget.value })} aria-describedby={`desc-${s.key}`} />
                    <small class="hint" id={`desc-${s.key}`}>{s.description}{/[.!?]$/.test(s.description) ? "" : "."} Default: <code>{s.defaultValue}</code>{s.stored ? "" : " (in force)"}</small>
                  </div>
                  <button type="submit" disabled={edits[s.key] === undefined}>Save</button>
                  {s.stored && <button type="button" onClick={() => void reset(s.key)}>Reset</button>}
                </form>
              </li>
            ))}
          </ul>
        )}
      </Show>
    </Page>
  )
}
