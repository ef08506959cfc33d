/**
 * The anna web console (issue 13): a Preact app served by the gateway at `/`. Hash routing
 * (`#/agents`), so any path the server falls back to index.html for works, and reloads land on the
 * same page. Admins see everything; users see the web chat, their sessions, usage, schedules, the
 * skills of the agents open to them, tokens and profile.
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { call, setCsrfToken, whenUnauthorized } from "./api.ts"
import { Agents } from "./pages/agents.tsx"
import { Bindings } from "./pages/bindings.tsx"
import { Channels } from "./pages/channels.tsx"
import { Chat } from "./pages/chat.tsx"
import { Dashboard } from "./pages/dashboard.tsx"
import { Diary } from "./pages/diary.tsx"
import { Login } from "./pages/login.tsx"
import { Playbook } from "./pages/playbook.tsx"
import { Plugins } from "./pages/plugins.tsx"
import { Profile } from "./pages/profile.tsx"
import { Providers } from "./pages/providers.tsx"
import { Mcp } from "./pages/mcp.tsx"
import { Schedules } from "./pages/schedules.tsx"
import { Sessions } from "./pages/sessions.tsx"
import { Settings } from "./pages/settings.tsx"
import { Skills } from "./pages/skills.tsx"
import { Tokens } from "./pages/tokens.tsx"
import { Usage } from "./pages/usage.tsx"
import { Users } from "./pages/users.tsx"
import { href, isAdmin, me, navigate, route, routeParts } from "./state.ts"
import { Loading } from "./ui.tsx"

interface PageDef {
  readonly id: string
  readonly label: string
  /** What a `user` sees it called, when it is their own view ("My rules"). */
  readonly userLabel?: string
  readonly adminOnly: boolean
  readonly view: (props: { readonly args: ReadonlyArray<string> }) => preact.JSX.Element
}

const PAGES: ReadonlyArray<PageDef> = [
  { id: "dashboard", label: "Dashboard", adminOnly: true, view: Dashboard },
  { id: "chat", label: "Chat", adminOnly: false, view: Chat },
  { id: "sessions", label: "Sessions", adminOnly: false, view: Sessions },
  { id: "usage", label: "Usage", adminOnly: false, view: Usage },
  { id: "playbook", label: "Playbook", userLabel: "My rules", adminOnly: false, view: Playbook },
  { id: "diary", label: "Diary", userLabel: "My diary", adminOnly: false, view: Diary },
  { id: "schedules", label: "Schedules", adminOnly: false, view: Schedules },
  { id: "skills", label: "Skills", adminOnly: false, view: Skills },
  { id: "providers", label: "Providers", adminOnly: true, view: Providers },
  { id: "agents", label: "Agents", adminOnly: true, view: Agents },
  { id: "mcp", label: "MCP servers", adminOnly: true, view: Mcp },
  { id: "channels", label: "Channels", adminOnly: true, view: Channels },
  { id: "users", label: "Users", adminOnly: true, view: Users },
  { id: "bindings", label: "Bindings", adminOnly: true, view: Bindings },
  { id: "plugins", label: "Plugins", adminOnly: true, view: Plugins },
  { id: "settings", label: "Settings", adminOnly: true, view: Settings },
  { id: "tokens", label: "API tokens", adminOnly: false, view: Tokens },
  { id: "profile", label: "Profile", adminOnly: false, view: Profile }
]

const logout = async () => {
  try {
    await call((c) => c.auth.logout())
  } finally {
    setCsrfToken(undefined)
    me.value = null
  }
}

const Shell = () => {
  const [menuOpen, setMenuOpen] = useState(false)
  const admin = isAdmin.value
  const pages = PAGES.filter((p) => admin || !p.adminOnly)
  const [first, ...args] = routeParts.value
  const page = pages.find((p) => p.id === first)
  useEffect(() => {
    if (page === undefined) navigate(admin ? "dashboard" : "chat")
  }, [page, admin])
  // Another page or view: focus its heading (screen readers announce it); the menu closes on phones.
  const where = route.value
  useEffect(() => {
    setMenuOpen(false)
    if (where !== "") document.getElementById("page-title")?.focus()
  }, [where])
  const View = page?.view
  return (
    <div class="shell">
      <button type="button" class="skip" onClick={() => document.getElementById("main")?.focus()}>Skip to content</button>
      <header class="topbar">
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <a class="brand" href={href(admin ? "dashboard" : "chat")}>anna</a>
        <span class="who">
          {me.value?.login ?? me.value?.user} <span class="badge">{me.value?.role}</span>
        </span>
        <button type="button" class="link" onClick={() => void logout()}>Log out</button>
      </header>
      <nav id="nav" class={menuOpen ? "open" : ""} aria-label="Console">
        <ul>
          {pages.map((p) => (
            <li key={p.id}>
              <a href={href(p.id)} aria-current={p.id === first ? "page" : undefined}>{admin ? p.label : (p.userLabel ?? p.label)}</a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>{View !== undefined ? <View args={args} /> : <Loading />}</main>
    </div>
  )
}

const App = () => {
  useEffect(() => {
    const off = whenUnauthorized(() => {
      me.value = null
    })
    call((c) => c.auth.me()).then(
      (m) => {
        setCsrfToken(m.csrfToken)
        me.value = { user: m.user, role: m.role, login: m.login }
      },
      () => {
        me.value = null
      }
    )
    return off
  }, [])
  if (me.value === undefined) return <Loading what="the console" />
  if (me.value === null) return <Login />
  return <Shell />
}

const root = document.getElementById("app")
if (root !== null) render(<App />, root)
