import { useState } from "preact/hooks"
import { call, setCsrfToken } from "../api.ts"
import { me } from "../state.ts"
import { Field, Notice, useAction } from "../ui.tsx"

/** Log in with a console account (the first admin is made with `anna admin create`). */
export const Login = () => {
  const [username, setUsername] = useState("")
  const [password, setPassword] = useState("")
  const action = useAction()
  const submit = async (e: Event) => {
    e.preventDefault()
    const r = await action.run(() => call((c) => c.auth.login({ payload: { username, password } })))
    if (r === undefined) return
    setCsrfToken(r.csrfToken)
    me.value = { user: r.user, role: r.role, login: r.login }
  }
  return (
    <main class="login">
      <form class="card" onSubmit={(e) => void submit(e)} aria-labelledby="login-title">
        <h1 id="login-title">anna</h1>
        <p class="muted">Log in to the console. The first admin is created on the server with <code>anna admin create NAME</code>.</p>
        <Field label="Username">{(id) => <input id={id} name="username" autocomplete="username" required value={username} onInput={(e) => setUsername(e.currentTarget.value)} />}</Field>
        <Field label="Password">
          {(id) => <input id={id} name="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />}
        </Field>
        <Notice error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>{action.busy ? "Logging in…" : "Log in"}</button>
      </form>
    </main>
  )
}
