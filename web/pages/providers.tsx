import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { Field, Notice, Page, Show, splitList, useAction, useLoad } from "../ui.tsx"
import { PricesEditor } from "./prices.tsx"

type ProviderType = "anthropic" | "openai" | "openai-response"

/**
 * Model providers: the list (keys masked by the server), add, enable/disable, a new key in place,
 * model prices (for usage costs), remove. Keys are write-only.
 */
export const Providers = () => {
  const list = useLoad(() => call((c) => c.providers.list()))
  const action = useAction()
  const [form, setForm] = useState({ id: "", type: "openai" as ProviderType, baseUrl: "", apiKey: "", defaultModel: "", models: "" })
  const set = (k: keyof typeof form) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) => setForm({ ...form, [k]: e.currentTarget.value })
  const add = async (e: Event) => {
    e.preventDefault()
    const models = splitList(form.models)
    const created = await action.run(
      () =>
        call((c) =>
          c.providers.create({
            payload: {
              id: form.id.trim(),
              type: form.type,
              ...(form.baseUrl.trim() !== "" ? { baseUrl: form.baseUrl.trim() } : {}),
              ...(form.apiKey !== "" ? { apiKey: form.apiKey } : {}),
              ...(form.defaultModel.trim() !== "" ? { defaultModel: form.defaultModel.trim() } : {}),
              ...(models.length > 0 ? { models } : {})
            }
          })
        ),
      `Provider ${form.id.trim()} added.`
    )
    if (created !== undefined) {
      // The key leaves the page with the request: the field is emptied at once.
      setForm({ id: "", type: form.type, baseUrl: "", apiKey: "", defaultModel: "", models: "" })
      list.reload()
    }
  }
  const toggle = async (id: string, enabled: boolean) => {
    await action.run(() => call((c) => c.providers.update({ params: { id }, payload: { enabled } })), `Provider ${id} ${enabled ? "enabled" : "disabled"}.`)
    list.reload()
  }
  const [rotate, setRotate] = useState({ id: "", apiKey: "" })
  const rotateKey = async (e: Event) => {
    e.preventDefault()
    const id = rotate.id
    const r = await action.run(() => call((c) => c.providers.update({ params: { id }, payload: { apiKey: rotate.apiKey } })), `Provider ${id}: new key saved.`)
    // The key leaves the page with the request.
    setRotate({ id: "", apiKey: "" })
    if (r !== undefined) list.reload()
  }
  const [pricesOf, setPricesOf] = useState("")
  const remove = async (id: string) => {
    if (!confirm(`Remove provider ${id}?`)) return
    await action.run(() => call((c) => c.providers.remove({ params: { id } })), `Provider ${id} removed.`)
    list.reload()
  }
  return (
    <Page title="Providers">
      <Notice error={action.error} done={action.done} />
      <Show loaded={list}>
        {(providers) =>
          providers.length === 0 ? (
            <p class="muted">No provider yet: add one below.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Providers</caption>
                <thead>
                  <tr><th scope="col">Id</th><th scope="col">Type</th><th scope="col">Base URL</th><th scope="col">Key</th><th scope="col">Default model</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
                </thead>
                <tbody>
                  {providers.map((p) => (
                    <tr key={p.id}>
                      <th scope="row">{p.id}</th>
                      <td>{p.type}</td>
                      <td class="wrap">{p.baseUrl}</td>
                      <td><code>{p.apiKey === "" ? "—" : p.apiKey}</code></td>
                      <td>{p.defaultModel}</td>
                      <td>{p.enabled ? "enabled" : "disabled"}</td>
                      <td>
                        <button type="button" class="small" onClick={() => void toggle(p.id, !p.enabled)} aria-label={`${p.enabled ? "Disable" : "Enable"} provider ${p.id}`}>
                          {p.enabled ? "Disable" : "Enable"}
                        </button>{" "}
                        <button type="button" class="small" onClick={() => setRotate({ id: p.id, apiKey: "" })} aria-label={`New key for provider ${p.id}`}>New key</button>{" "}
                        <button type="button" class="small" onClick={() => setPricesOf(p.id)} aria-label={`Prices of provider ${p.id}`} aria-pressed={pricesOf === p.id}>Prices</button>{" "}
                        <button type="button" class="danger small" onClick={() => void remove(p.id)} aria-label={`Remove provider ${p.id}`}>Remove</button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      {pricesOf !== "" && (
        <PricesEditor
          key={pricesOf}
          providerId={pricesOf}
          models={[...new Set(list.data?.filter((p) => p.id === pricesOf).flatMap((p) => [p.defaultModel, ...p.models]) ?? [])]}
          onClose={() => setPricesOf("")}
        />
      )}
      {rotate.id !== "" && (
        <form class="card" onSubmit={(e) => void rotateKey(e)} aria-labelledby="rotate-key">
          <h2 id="rotate-key">New key for {rotate.id}</h2>
          <p class="muted">Replaces the key in place (agents keep using the provider); the next call uses it.</p>
          <Field label="New API key" hint="Write-only: never shown again, only masked">
            {(id) => <input id={id} name="newApiKey" type="password" autocomplete="new-password" required value={rotate.apiKey} onInput={(e) => setRotate({ ...rotate, apiKey: e.currentTarget.value })} />}
          </Field>
          <button type="submit" class="primary" disabled={action.busy}>Save key</button>{" "}
          <button type="button" onClick={() => setRotate({ id: "", apiKey: "" })}>Cancel</button>
        </form>
      )}
      <form class="card" onSubmit={(e) => void add(e)} aria-labelledby="add-provider">
        <h2 id="add-provider">Add a provider</h2>
        <div class="grid">
          <Field label="Id" hint="A short name, e.g. openai or local">{(id) => <input id={id} name="id" required pattern="[A-Za-z0-9._\-]+" value={form.id} onInput={set("id")} />}</Field>
          <Field label="Type">
            {(id) => (
              <select id={id} name="type" value={form.type} onChange={set("type")}>
                <option value="openai">OpenAI-compatible (Chat Completions)</option>
                <option value="openai-response">OpenAI Responses</option>
                <option value="anthropic">Anthropic</option>
              </select>
            )}
          </Field>
          <Field label="Base URL" hint="Empty: the provider's public endpoint">{(id) => <input id={id} name="baseUrl" type="url" value={form.baseUrl} onInput={set("baseUrl")} />}</Field>
          <Field label="API key" hint="Write-only: never shown again, only masked">
            {(id) => <input id={id} name="apiKey" type="password" autocomplete="new-password" value={form.apiKey} onInput={set("apiKey")} />}
          </Field>
          <Field label="Default model" hint="Empty: the first model the server lists">{(id) => <input id={id} name="defaultModel" value={form.defaultModel} onInput={set("defaultModel")} />}</Field>
          <Field label="Models" hint="Comma-separated (optional)">{(id) => <input id={id} name="models" value={form.models} onInput={set("models")} />}</Field>
        </div>
        <button type="submit" class="primary" disabled={action.busy}>Add provider</button>
      </form>
    </Page>
  )
}
