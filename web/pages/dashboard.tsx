import { useEffect, useState } from "preact/hooks"
import { call } from "../api.ts"
import { BarChart, LineChart } from "../charts.tsx"
import { href } from "../state.ts"
import { Page, Show, formatNumber, formatTime, useLoad } from "../ui.tsx"
import { costLabel } from "./prices.tsx"

type Window = "24h" | "7d" | "30d"

/** `2026-11-27T13` → `13:00`, `2026-11-27` → `11-27`. */
export const bucketLabel = (b: string) => (b.includes("T") ? `${b.slice(11, 13)}:00` : b.slice(5))

/**
 * A usage row's name: its user or agent id, or for calls made for none (user "" — e.g. `anna memory
 * compact` run from the command line) a name that says so, instead of an empty cell.
 */
export const rowName = (dimension: "user" | "agent" | "other", key: string): string =>
  key !== "" ? key : dimension === "user" ? "(no user)" : dimension === "agent" ? "(no agent)" : "(none)"

/** Tokens of a usage row (what spend is shown in while no model has a price). */
export const tokensOf = (r: { readonly inputTokens: number; readonly outputTokens: number }) => r.inputTokens + r.outputTokens

/** Live sessions, turns and tokens over time, spend by user and agent; refreshed every 15 s. */
export const Dashboard = () => {
  const [window, setWindow] = useState<Window>("24h")
  const data = useLoad(() => call((c) => c.usage.dashboard({ query: { window } })), [window])
  useEffect(() => {
    const t = setInterval(data.reload, 15_000)
    return () => clearInterval(t)
  }, [data.reload])
  return (
    <Page
      title="Dashboard"
      actions={
        <fieldset class="segmented">
          <legend class="sr-only">Time window</legend>
          {(["24h", "7d", "30d"] as const).map((w) => (
            <button type="button" key={w} aria-pressed={window === w} onClick={() => setWindow(w)}>{w}</button>
          ))}
        </fieldset>
      }
    >
      <GettingStarted />
      <Show loaded={data}>
        {(d) => {
          const labels = d.series.map((p) => bucketLabel(p.bucket))
          // Money once some price is known (a row without one at $0, "partial" where some calls are unpriced); tokens before.
          const spend = (rows: typeof d.spendByUser, dimension: "user" | "agent") =>
            rows.map((r) =>
              d.currency !== null
                ? { label: rowName(dimension, r.key), value: r.cost ?? 0, text: costLabel(r) ?? "no price" }
                : { label: rowName(dimension, r.key), value: tokensOf(r) }
            )
          const unit = d.currency ?? "tokens"
          return (
            <>
              <div class="stats">
                <div class="stat"><span class="stat-value">{d.live.sessions}</span><span class="stat-label">live sessions</span></div>
                <div class="stat"><span class="stat-value">{d.live.running}</span><span class="stat-label">turns running</span></div>
                <div class="stat"><span class="stat-value">{formatNumber(d.series.reduce((a, p) => a + p.turns, 0))}</span><span class="stat-label">turns ({window})</span></div>
                <div class="stat"><span class="stat-value">{formatNumber(d.series.reduce((a, p) => a + p.inputTokens + p.outputTokens, 0))}</span><span class="stat-label">tokens ({window})</span></div>
              </div>
              <div class="charts">
                <LineChart title="Turns" labels={labels} series={[{ name: "turns", tone: "s1", values: d.series.map((p) => p.turns) }]} />
                <LineChart
                  title="Tokens"
                  labels={labels}
                  series={[
                    { name: "input", tone: "s2", values: d.series.map((p) => p.inputTokens) },
                    { name: "output", tone: "s3", values: d.series.map((p) => p.outputTokens) }
                  ]}
                />
                <BarChart title={`Spend by user (${unit})`} items={spend(d.spendByUser, "user")} unit={unit} />
                <BarChart title={`Spend by agent (${unit})`} items={spend(d.spendByAgent, "agent")} unit={unit} />
              </div>
              {d.currency === null && <p class="muted">Costs are unknown (no model has a price: set them on the <a href={href("providers")}>providers</a> page), so spend is shown in tokens.</p>}
              {d.currency !== null && [...d.spendByUser, ...d.spendByAgent].some((r) => r.unpricedCalls > 0) && (
                <p class="muted">Some calls are on models without a price: their spend is partial.</p>
              )}
              <h2>Live sessions</h2>
              {d.live.list.length === 0 ? (
                <p class="muted">No session is live right now.</p>
              ) : (
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr><th scope="col">Session</th><th scope="col">Agent</th><th scope="col">User</th><th scope="col">State</th><th scope="col">Last turn</th></tr>
                    </thead>
                    <tbody>
                      {d.live.list.map((s) => (
                        <tr key={s.sessionKey}>
                          <th scope="row"><a href={href("sessions", s.sessionKey)}>{s.sessionKey}</a></th>
                          <td>{s.agentId}</td>
                          <td>{s.userId}</td>
                          <td>{s.running ? "running" : "idle"}</td>
                          <td>{formatTime(s.lastTurnAt)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </>
          )
        }}
      </Show>
    </Page>
  )
}

/** On a gateway with no provider or no enabled agent yet, what to do first (gone once done). */
const GettingStarted = () => {
  const setup = useLoad(() => Promise.all([call((c) => c.providers.list()), call((c) => c.agents.list())]))
  if (setup.data === undefined) return null
  const [providers, agents] = setup.data
  const steps = [
    providers.length === 0 ? <li key="p"><a href={href("providers")}>Add a provider</a>: an API key and base URL of a model service.</li> : null,
    !agents.some((a) => a.enabled) ? <li key="a"><a href={href("agents", "new")}>Create an agent</a> on one of its models, and say who may use it.</li> : null,
    providers.length === 0 || !agents.some((a) => a.enabled) ? <li key="u"><a href={href("users")}>Add users</a> with a password for the console, then <a href={href("chat")}>chat</a>.</li> : null
  ].filter((x) => x !== null)
  if (steps.length === 0) return null
  return (
    <section class="card getting-started" aria-labelledby="getting-started">
      <h2 id="getting-started">Getting started</h2>
      <ol>{steps}</ol>
    </section>
  )
}
