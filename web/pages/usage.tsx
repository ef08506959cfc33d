import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { BarChart, LineChart } from "../charts.tsx"
import { isAdmin } from "../state.ts"
import { Field, Page, Show, formatCost, formatNumber, useLoad } from "../ui.tsx"
import { bucketLabel, rowName, tokensOf } from "./dashboard.tsx"
import { costLabel } from "./prices.tsx"

const DAY = 24 * 3600_000

/** Every UTC day `YYYY-MM-DD` of [since, until), so days without use show as 0. */
const everyDay = (since: number, until: number): ReadonlyArray<string> => {
  const days: Array<string> = []
  for (let t = Math.floor(since / DAY) * DAY; t < until && days.length < 400; t += DAY) days.push(new Date(t).toISOString().slice(0, 10))
  return days
}

/** Usage by user, agent, model and day over a range (a `user` sees their own). */
export const Usage = () => {
  const [days, setDays] = useState(30)
  const [user, setUser] = useState("")
  const [agent, setAgent] = useState("")
  const report = useLoad(
    () =>
      call((c) =>
        c.usage.report({
          query: {
            since: Date.now() - days * DAY,
            ...(user.trim() !== "" ? { user: user.trim() } : {}),
            ...(agent.trim() !== "" ? { agent: agent.trim() } : {})
          }
        })
      ),
    [days, user, agent]
  )
  return (
    <Page title="Usage">
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <Field label="Range">
          {(id) => (
            <select id={id} value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
              <option value="1">last 24 hours</option>
              <option value="7">last 7 days</option>
              <option value="30">last 30 days</option>
              <option value="90">last 90 days</option>
            </select>
          )}
        </Field>
        {isAdmin.value && <Field label="User">{(id) => <input id={id} defaultValue={user} onChange={(e) => setUser(e.currentTarget.value)} placeholder="all" />}</Field>}
        <Field label="Agent">{(id) => <input id={id} defaultValue={agent} onChange={(e) => setAgent(e.currentTarget.value)} placeholder="all" />}</Field>
      </form>
      <Show loaded={report}>
        {(r) => (
          <>
            <div class="stats">
              <div class="stat"><span class="stat-value">{formatNumber(r.totals.calls)}</span><span class="stat-label">model calls</span></div>
              <div class="stat"><span class="stat-value">{formatNumber(r.totals.inputTokens)}</span><span class="stat-label">input tokens</span></div>
              <div class="stat"><span class="stat-value">{formatNumber(r.totals.outputTokens)}</span><span class="stat-label">output tokens</span></div>
              <div class="stat" id="usage-cost">
                <span class="stat-value">{r.totals.cost === null ? "—" : formatCost(r.totals.cost)}</span>
                <span class="stat-label">{r.totals.cost === null ? "cost (no prices set)" : r.totals.unpricedCalls > 0 ? `cost (partial: ${formatNumber(r.totals.unpricedCalls)} calls unpriced)` : "cost"}</span>
              </div>
            </div>
            <div class="charts" id="usage-chart">
              <LineChart
                title="Tokens by day"
                labels={everyDay(r.since, r.until).map(bucketLabel)}
                series={[
                  { name: "input", tone: "s2", values: everyDay(r.since, r.until).map((d) => r.byDay.find((x) => x.key === d)?.inputTokens ?? 0) },
                  { name: "output", tone: "s3", values: everyDay(r.since, r.until).map((d) => r.byDay.find((x) => x.key === d)?.outputTokens ?? 0) }
                ]}
              />
              {r.currency === null ? (
                <BarChart title="Tokens by agent" items={r.byAgent.map((a) => ({ label: rowName("agent", a.key), value: tokensOf(a) }))} unit="tokens" />
              ) : (
                <BarChart title="Cost by agent (USD)" items={r.byAgent.map((a) => ({ label: rowName("agent", a.key), value: a.cost ?? 0, text: costLabel(a) ?? "no price" }))} unit="USD" />
              )}
            </div>
            {([["By user", r.byUser, "user"], ["By agent", r.byAgent, "agent"], ["By model", r.byModel, "other"], ["By day", r.byDay, "other"]] as const).map(([title, rows, dimension]) =>
              rows.length === 0 ? null : (
                <div class="table-wrap" key={title}>
                  <table>
                    <caption>{title}</caption>
                    <thead>
                      <tr><th scope="col">{title.slice(3)}</th><th scope="col">Calls</th><th scope="col">Failed</th><th scope="col">Input</th><th scope="col">Output</th><th scope="col">Cache read</th><th scope="col">Cost</th></tr>
                    </thead>
                    <tbody>
                      {rows.map((row) => (
                        <tr key={row.key}>
                          <th scope="row">{rowName(dimension, row.key)}</th>
                          <td>{formatNumber(row.calls)}</td>
                          <td>{formatNumber(row.failed)}</td>
                          <td>{formatNumber(row.inputTokens)}</td>
                          <td>{formatNumber(row.outputTokens)}</td>
                          <td>{formatNumber(row.cacheReadTokens)}</td>
                          <td>{costLabel(row) ?? "no price"}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )
            )}
          </>
        )}
      </Show>
    </Page>
  )
}
