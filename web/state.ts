/** The console's shared state: who is logged in, and where we are (hash routing: #/page/arg…). */
import { computed, signal } from "@preact/signals"

export type Role = "admin" | "user"
export interface Me {
  readonly user: string
  readonly role: Role
  /** The name the console account logs in with, when it is not the user's id (one person, one user). */
  readonly login?: string | undefined
}

/** undefined: not known yet (the first GET /api/auth/me is running); null: logged out. */
export const me = signal<Me | null | undefined>(undefined)
export const isAdmin = computed(() => me.value?.role === "admin")

const readHash = () => location.hash.replace(/^#\/?/, "")
export const route = signal(readHash())
addEventListener("hashchange", () => {
  route.value = readHash()
})
/** The page and its arguments: `#/sessions/abc` → ["sessions", "abc"]. */
export const routeParts = computed(() => route.value.split("?")[0]?.split("/").filter((p) => p !== "").map(decodeURIComponent) ?? [])
export const navigate = (path: string) => {
  location.hash = `#/${path}`
}
export const href = (...parts: ReadonlyArray<string>) => `#/${parts.map(encodeURIComponent).join("/")}`
