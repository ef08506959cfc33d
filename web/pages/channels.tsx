import { useEffect, useRef, useState } from "preact/hooks"
import { call } from "../api.ts"
import { Field, Notice, Page, Show, useAction, useLoad } from "../ui.tsx"

type LoginState = Awaited<ReturnType<typeof startLogin>>
const startLogin = () => call((c) => c.channels.wechatLoginStart())

/** Channels: state, enable/disable, settings (secrets masked; a new value replaces), WeChat QR login. */
export const Channels = () => {
  const list = useLoad(() => call((c) => c.channels.list()))
  const action = useAction()
  const toggle = async (id: string, on: boolean) => {
    await action.run(() => call((c) => (on ? c.channels.enable({ params: { id } }) : c.channels.disable({ params: { id } }))), `${id} ${on ? "enabled" : "disabled"}.`)
    list.reload()
  }
  return (
    <Page title="Channels">
      <Notice error={action.error} done={action.done} />
      <Show loaded={list}>
        {(channels) => (
          <div class="cards">
            {channels.map((ch) => (
              <section class="card" key={ch.id} aria-labelledby={`ch-${ch.id}`}>
                <header class="card-head">
                  <h2 id={`ch-${ch.id}`}>{ch.id}</h2>
                  <span class={`badge ${ch.enabled ? "on" : ""}`}>{ch.enabled ? (ch.state ?? "enabled") : "disabled"}</span>
                  <button type="button" class="small" onClick={() => void toggle(ch.id, !ch.enabled)}>{ch.enabled ? "Disable" : "Enable"}</button>
                </header>
                {ch.description !== undefined && <p class="muted">{ch.description}</p>}
                {ch.error !== undefined && <p class="notice error">{ch.error}</p>}
                <ChannelSettings id={ch.id} config={ch.config} onSaved={list.reload} />
                {ch.id === "wechat" && <WechatLogin onDone={list.reload} />}
              </section>
            ))}
          </div>
        )}
      </Show>
    </Page>
  )
}

const show = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v))

const ChannelSettings = (props: { readonly id: string; readonly config: Record<string, unknown>; readonly onSaved: () => void }) => {
  const action = useAction()
  const [key, setKey] = useState("")
  const [value, setValue] = useState("")
  const save = async (e: Event) => {
    e.preventDefault()
    const r = await action.run(() => call((c) => c.channels.setSettings({ params: { id: props.id }, payload: { config: { [key.trim()]: value } } })), `${key.trim()} saved.`)
    if (r !== undefined) {
      setKey("")
      setValue("")
      props.onSaved()
    }
  }
  const entries = Object.entries(props.config)
  return (
    <details>
      <summary>Settings ({entries.length})</summary>
      {entries.length > 0 && (
        <dl class="facts">
          {entries.map(([k, v]) => <div key={k}><dt>{k}</dt><dd><code>{show(v)}</code></dd></div>)}
        </dl>
      )}
      <form class="inline" onSubmit={(e) => void save(e)}>
        <Field label="Setting">{(id) => <input id={id} required value={key} onInput={(e) => setKey(e.currentTarget.value)} list={`keys-${props.id}`} />}</Field>
        <datalist id={`keys-${props.id}`}>{entries.map(([k]) => <option key={k} value={k} />)}</datalist>
        <Field label="New value" hint="Write-only (tokens stay masked); empty removes the key">
          {(id) => <input id={id} type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />}
        </Field>
        <button type="submit" disabled={action.busy}>Save</button>
      </form>
      <Notice error={action.error} done={action.done} />
    </details>
  )
}

/** WeChat's QR login: start it, show the code, follow it until confirmed or failed. */
const WechatLogin = (props: { readonly onDone: () => void }) => {
  const [state, setState] = useState<LoginState | undefined>(undefined)
  const action = useAction()
  const canvas = useRef<HTMLCanvasElement>(null)
  useEffect(() => {
    const url = state?.qrcodeUrl
    const target = canvas.current
    // The QR encoder loads only here (its own chunk), not with every page.
    if (url === undefined || target === null) return
    void import("qrcode").then((m) => {
      // A CommonJS module: its exports arrive as the namespace's default (the named ones do not).
      return m.default.toCanvas(target, url, { width: 220, margin: 1 })
    })
  }, [state?.qrcodeUrl])
  useEffect(() => {
    if (state === undefined || state.status === "confirmed" || state.status === "failed") {
      if (state?.status === "confirmed") props.onDone()
      return
    }
    const id = state.id
    const t = setTimeout(() => {
      call((c) => c.channels.wechatLoginStatus({ params: { id } })).then(setState, () => undefined)
    }, 2000)
    return () => clearTimeout(t)
  }, [state, props.onDone])
  return (
    <div class="wechat-login">
      <button type="button" onClick={() => void action.run(startLogin).then((s) => s !== undefined && setState(s))} disabled={action.busy}>Log in with a QR code</button>
      <Notice error={action.error} />
      {state !== undefined && (
        <div role="status">
          <p>
            {state.status === "waiting" && "Scan the code with WeChat on your phone."}
            {state.status === "scanned" && "Scanned: confirm on your phone."}
            {state.status === "confirmed" && `Logged in${state.botId !== undefined ? ` as ${state.botId}` : ""}.`}
            {state.status === "failed" && `Login failed: ${state.error ?? "try again"}.`}
          </p>
          {state.qrcodeUrl !== undefined && (state.status === "waiting" || state.status === "scanned") && (
            <>
              <canvas ref={canvas} aria-label="WeChat login QR code" />
              <p><a href={state.qrcodeUrl} target="_blank" rel="noreferrer">Open the login link on the phone</a></p>
            </>
          )}
        </div>
      )}
    </div>
  )
}
