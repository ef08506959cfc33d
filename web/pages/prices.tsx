import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { Field, Notice, Show, formatCost, useAction, useLoad } from "../ui.tsx"

/** A usage row's cost as money, "partial" when some of its calls have no price; undefined when none is priced. */
export const costLabel = (r: { readonly cost: number | null; readonly unpricedCalls: number }): string | undefined =>
  r.cost === null ? undefined : `${formatCost(r.cost)}${r.unpricedCalls > 0 ? " (partial)" : ""}`

const blank = { model: "", input: "", output: "", cacheRead: "", cacheWrite: "" }

/** A price field's value: a number of USD, or undefined when left empty. */
const amount = (s: string): number | undefined => (s.trim() === "" ? undefined : Number(s))

/**
 * One provider's model prices (USD per million tokens): the list with a remove button each, and a
 * form that sets (or replaces) a model's price. Usage costs come from these, past calls included.
 */
export const PricesEditor = (props: { readonly providerId: string; readonly models: ReadonlyArray<string>; readonly onClose: () => void }) => {
  const id = props.providerId
  const prices = useLoad(() => call((c) => c.providers.prices({ params: { id } })), [id])
  const action = useAction()
  const [form, setForm] = useState(blank)
  const set = (k: keyof typeof blank) => (e: { currentTarget: HTMLInputElement }) => setForm({ ...form, [k]: e.currentTarget.value })
  const save = async (e: Event) => {
    e.preventDefault()
    const model = form.model.trim()
    const cacheRead = amount(form.cacheRead)
    const cacheWrite = amount(form.cacheWrite)
    const saved = await action.run(
      () =>
        call((c) =>
          c.providers.setPrice({
            params: { id, model },
            payload: {
              input: Number(form.input),
              output: Number(form.output),
              ...(cacheRead === undefined ? {} : { cacheRead }),
              ...(cacheWrite === undefined ? {} : { cacheWrite })
            }
          })
        ),
      `Price of ${id}/${model} saved.`
    )
    if (saved !== undefined) {
      setForm(blank)
      prices.reload()
    }
  }
  const remove = async (model: string) => {
    await action.run(() => call((c) => c.providers.removePrice({ params: { id, model } })), `Price of ${id}/${model} removed.`)
    prices.reload()
  }
  const usd = (n: number | null) => (n === null ? "= input" : `$${n}`)
  const listId = `models-${id}`
  return (
    <section class="card" aria-labelledby={`prices-${id}`}>
      <div class="card-head">
        <h2 id={`prices-${id}`}>Prices of {id}</h2>
        <button type="button" class="small" onClick={props.onClose}>Close</button>
      </div>
      <p class="muted">USD per million tokens. Usage and the dashboard show costs from these, past calls included; a cache price left empty is the input price.</p>
      <Notice error={action.error} done={action.done} />
      <Show loaded={prices}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No price set for this provider's models.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Prices of {id}</caption>
                <thead>
                  <tr><th scope="col">Model</th><th scope="col">Input</th><th scope="col">Output</th><th scope="col">Cache read</th><th scope="col">Cache write</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
                </thead>
                <tbody>
                  {list.map((p) => (
                    <tr key={p.model}>
                      <th scope="row">{p.model}</th>
                      <td>${p.input}</td>
                      <td>${p.output}</td>
                      <td>{usd(p.cacheRead)}</td>
                      <td>{usd(p.cacheWrite)}</td>
                      <td>
                        <button type="button" class="danger small" onClick={() => void remove(p.model)} aria-label={`Remove the price of ${p.model}`}>Remove</button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      <form onSubmit={(e) => void save(e)} aria-label={`Set a price for a model of ${id}`}>
        <div class="grid">
          <Field label="Model" hint="As usage names it">
            {(fid) => <input id={fid} name="priceModel" required list={listId} value={form.model} onInput={set("model")} />}
          </Field>
          <Field label="Input, USD per 1M tokens">
            {(fid) => <input id={fid} name="priceInput" type="number" min="0" max="10000" step="any" required value={form.input} onInput={set("input")} />}
          </Field>
          <Field label="Output, USD per 1M tokens">
            {(fid) => <input id={fid} name="priceOutput" type="number" min="0" max="10000" step="any" required value={form.output} onInput={set("output")} />}
          </Field>
          <Field label="Cache read, USD per 1M tokens" hint="Empty: the input price">
            {(fid) => <input id={fid} name="priceCacheRead" type="number" min="0" max="10000" step="any" value={form.cacheRead} onInput={set("cacheRead")} />}
          </Field>
          <Field label="Cache write, USD per 1M tokens" hint="Empty: the input price">
            {(fid) => <input id={fid} name="priceCacheWrite" type="number" min="0" max="10000" step="any" value={form.cacheWrite} onInput={set("cacheWrite")} />}
          </Field>
        </div>
        <datalist id={listId}>{props.models.map((m) => <option key={m} value={m} />)}</datalist>
        <button type="submit" class="primary" disabled={action.busy}>Save price</button>
      </form>
    </section>
  )
}
