/** Small building blocks shared by the pages: loading data, forms, notices, tables, dates. */
import type { ComponentChildren, JSX } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { ApiError } from "./api.ts"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: ApiError | undefined
  readonly loading: boolean
  readonly reload: () => void
}

/** Runs `load` now and whenever `deps` change; `reload()` runs it again. */
export const useLoad = <A,>(load: () => Promise<A>, deps: ReadonlyArray<unknown> = []): Loaded<A> => {
  const [state, setState] = useState<{ data: A | undefined; error: ApiError | undefined; loading: boolean }>({ data: undefined, error: undefined, loading: true })
  const [tick, setTick] = useState(0)
  const current = useRef(0)
  useEffect(() => {
    const run = ++current.current
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => run === current.current && setState({ data, error: undefined, loading: false }),
      (e: unknown) => run === current.current && setState((s) => ({ data: s.data, error: asError(e), loading: false }))
    )
  }, [...deps, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { ...state, reload }
}

export const asError = (e: unknown): ApiError => (e instanceof ApiError ? e : new ApiError("error", e instanceof Error ? e.message : String(e)))

/** An action run from a button or form: busy while it runs, its error kept to show. */
export const useAction = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiError | undefined>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const run = async <A,>(f: () => Promise<A>, doneMessage?: string): Promise<A | undefined> => {
    setBusy(true)
    setError(undefined)
    setDone(undefined)
    try {
      const a = await f()
      if (doneMessage !== undefined) setDone(doneMessage)
      return a
    } catch (e) {
      setError(asError(e))
      return undefined
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, done, run, clear: () => setError(undefined) }
}

export const Notice = (props: { readonly error?: ApiError | undefined; readonly done?: string | undefined }) => (
  <>
    {props.error !== undefined && <p class="notice error" role="alert">{props.error.message}</p>}
    {props.done !== undefined && <p class="notice ok" role="status">{props.done}</p>}
  </>
)

export const Page = (props: { readonly title: string; readonly children: ComponentChildren; readonly actions?: ComponentChildren }) => {
  useEffect(() => {
    document.title = `${props.title} · anna`
  }, [props.title])
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>{props.title}</h1>
        {props.actions}
      </header>
      {props.children}
    </section>
  )
}

let fieldIds = 0
/** A labelled control: the label is tied to the input by id. */
export const Field = (props: { readonly label: string; readonly hint?: string; readonly children: (id: string) => JSX.Element }) => {
  const id = useRef(`f${++fieldIds}`).current
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id)}
      {props.hint !== undefined && <small class="hint">{props.hint}</small>}
    </div>
  )
}

export const Loading = (props: { readonly what?: string }) => <p class="muted" role="status">Loading{props.what !== undefined ? ` ${props.what}` : ""}…</p>

/** Shows the loaded data, or the load's progress or error. */
export const Show = <A,>(props: { readonly loaded: Loaded<A>; readonly children: (a: A) => ComponentChildren }) =>
  props.loaded.data !== undefined ? (
    <>
      {props.loaded.error !== undefined && <Notice error={props.loaded.error} />}
      {props.children(props.loaded.data)}
    </>
  ) : props.loaded.error !== undefined ? (
    <Notice error={props.loaded.error} />
  ) : (
    <Loading />
  )

export const formatTime = (ms: number | undefined | null) => (ms === undefined || ms === null || ms === 0 ? "—" : new Date(ms).toLocaleString())
export const formatNumber = (n: number) => n.toLocaleString("en-US")
export const formatCost = (usd: number) => `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`

/** Form values as strings, by the controls' names. */
export const formValues = (form: HTMLFormElement): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [k, v] of new FormData(form).entries()) if (typeof v === "string") out[k] = v
  return out
}
export const splitList = (s: string | undefined) => (s ?? "").split(/[,\n]/).map((x) => x.trim()).filter((x) => x !== "")
