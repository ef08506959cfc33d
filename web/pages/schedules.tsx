/**
 * Schedules: jobs that run an agent turn with a prompt at set times (`/api/schedules`). An admin sees
 * and manages every job, as the operator; a user sees "my schedules" — their own jobs, added on the
 * agents open to them and delivered to themselves only (the server holds them to the chat tool's
 * limits). Every text here (prompts, replies, errors) is shown as text.
 */
import { useEffect, useState } from "preact/hooks"
import type { JobView, RunView } from "../../src/domain/admin/groups/schedule.ts"
import { PUSH_CHANNELS } from "../../src/domain/channels/notify.ts"
import { describeSchedule } from "../../src/domain/scheduler/schedule.ts"
import { call } from "../api.ts"
import { isAdmin, me } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, useAction, useLoad } from "../ui.tsx"

type Job = typeof JobView.Type
type Run = typeof RunView.Type
type Kind = "cron" | "every" | "at"

const KINDS: ReadonlyArray<{ readonly kind: Kind; readonly label: string; readonly field: string; readonly hint: string }> = [
  { kind: "cron", label: "On a cron schedule", field: "Cron expression", hint: "5 fields: minute hour day month weekday, e.g. 0 8 * * 1-5" },
  { kind: "every", label: "Every interval", field: "Interval", hint: "e.g. 30m, 2h, 1d" },
  { kind: "at", label: "Once", field: "Time", hint: "Runs once, then the job is removed (its history stays)" }
]

const localZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone

/** The agents a job may run on: every one for an admin, the ones open to a user. */
const loadAgents = () =>
  isAdmin.value
    ? call((c) => c.agents.list()).then((as) => as.map((a) => ({ id: a.id, name: a.name })))
    : call((c) => c.chat.agents()).then((as) => as.map((a) => ({ id: a.id, name: a.name })))

const delivery = (j: Job) =>
  j.deliverUser === null ? "stored only" : `${j.deliverUser} on ${j.deliverChannel ?? "where they wrote last"}`

/** A run's reply or error, first line in the table, the whole of it one click away. */
const Outcome = (props: { readonly run: Run }) => {
  const text = props.run.error ?? props.run.reply ?? ""
  if (text === "") return <span class="muted">—</span>
  const first = text.split("\n")[0] ?? ""
  return first.length < 120 && !text.includes("\n") ? <span>{text}</span> : (
    <details>
      <summary>{first.slice(0, 120)}…</summary>
      <p>{text}</p>
    </details>
  )
}

/** How often an open history looks for new runs (a "run now" lands within seconds). */
const HISTORY_REFRESH_MS = 2_000

/** A job's runs, newest first; `onRefresh` is told at each look (the list's next run moves too). */
const History = (props: { readonly job: Job; readonly onClose: () => void; readonly onRefresh: () => void }) => {
  const runs = useLoad(() => call((c) => c.schedules.history({ params: { id: props.job.id } })), [props.job.id])
  const { reload } = runs
  const { onRefresh } = props
  useEffect(() => {
    const timer = setInterval(() => {
      reload()
      onRefresh()
    }, HISTORY_REFRESH_MS)
    return () => clearInterval(timer)
  }, [reload, onRefresh])
  return (
    <section class="card" aria-labelledby="history-title">
      <div class="card-head">
        <h2 id="history-title">History of {props.job.id}</h2>
        <span class="muted">Refreshes while open.</span>
        <button type="button" class="small" onClick={props.onClose}>Close</button>
      </div>
      <Show loaded={runs}>
        {(rs) =>
          rs.length === 0 ? <p class="muted">It has not run yet.</p> : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Status</th><th scope="col">Trigger</th><th scope="col">Delivered to</th><th scope="col">Reply or error</th></tr>
                </thead>
                <tbody>
                  {rs.map((r) => (
                    <tr key={r.id}>
                      <th scope="row">{formatTime(r.startedAt)}</th>
                      <td>{formatTime(r.endedAt)}</td>
                      <td><span class="badge">{r.status}</span></td>
                      <td>{r.trigger}</td>
                      <td>{r.deliveredTo ?? "—"}</td>
                      <td class="wrap"><Outcome run={r} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
    </section>
  )
}

export const Schedules = () => {
  const jobs = useLoad(() => call((c) => c.schedules.list()))
  const agents = useLoad(loadAgents)
  const action = useAction()
  const [kind, setKind] = useState<Kind>("cron")
  const [deliver, setDeliver] = useState(true)
  const [shown, setShown] = useState<Job | undefined>(undefined)
  const [removing, setRemoving] = useState<Job | undefined>(undefined)
  const admin = isAdmin.value
  const chosen = KINDS.find((k) => k.kind === kind) ?? KINDS[0]

  const add = async (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    const when = (f["when"] ?? "").trim()
    const tz = (f["tz"] ?? "").trim()
    const opt = (key: string) => ((f[key] ?? "").trim() === "" ? {} : { [key]: (f[key] ?? "").trim() })
    const target = admin
      ? { ...opt("deliver"), ...opt("user") }
      : deliver ? { deliver: (f["channel"] ?? "") === "" ? me.value?.user ?? "" : `${me.value?.user ?? ""}@${f["channel"] ?? ""}` } : {}
    const job = await action.run(() =>
      call((c) =>
        c.schedules.add({
          payload: {
            agent: f["agent"] ?? "",
            ...(kind === "cron" ? { cron: when } : kind === "every" ? { every: when } : { at: when }),
            ...(kind !== "every" && tz !== "" ? { tz } : {}),
            prompt: f["prompt"] ?? "",
            sessionMode: (f["sessionMode"] ?? "reuse") as "reuse" | "new",
            ...((f["catchUp"] ?? "") === "" ? {} : { catchUp: f["catchUp"] as "run" | "skip" }),
            ...target
          }
        })
      ), "Job added.")
    if (job !== undefined) {
      form.reset()
      setKind("cron")
      setDeliver(true)
      jobs.reload()
    }
  }
  const runNow = async (j: Job) => {
    await action.run(() => call((c) => c.schedules.run({ params: { id: j.id } })), `${j.id} will run within seconds (see its history).`)
    jobs.reload()
  }
  const remove = async (j: Job) => {
    setRemoving(undefined)
    if (shown?.id === j.id) setShown(undefined)
    await action.run(() => call((c) => c.schedules.remove({ params: { id: j.id } })), `${j.id} removed, with its history.`)
    jobs.reload()
  }

  return (
    <Page title="Schedules">
      <p class="muted">
        {admin
          ? "Every scheduled job: a turn of an agent with a prompt at set times, as its owner, the answer delivered to them."
          : "Your scheduled jobs: the agent gets the prompt at the set times and sends you its answer (at most 20 per agent, every at least 1 minute)."}
      </p>
      <Notice error={action.error} done={action.done} />
      {removing !== undefined && (
        <section class="card" role="alertdialog" aria-labelledby="remove-title">
          <h2 id="remove-title">Remove {removing.id}?</h2>
          <p>The job and its history go; it will not run again.</p>
          <div class="actions">
            <button type="button" class="danger" disabled={action.busy} onClick={() => void remove(removing)}>Remove</button>
            <button type="button" onClick={() => setRemoving(undefined)}>Cancel</button>
          </div>
        </section>
      )}
      <Show loaded={jobs}>
        {(js) =>
          js.length === 0 ? <p class="muted">{admin ? "No scheduled job." : "You have no scheduled job."}</p> : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Scheduled jobs</caption>
                <thead>
                  <tr>
                    <th scope="col">Job</th><th scope="col">Agent</th>{admin && <th scope="col">Owner</th>}<th scope="col">Schedule</th>
                    <th scope="col">Next run</th><th scope="col">Delivery</th><th scope="col">Prompt</th><th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {js.map((j) => (
                    <tr key={j.id}>
                      <th scope="row"><code>{j.id}</code></th>
                      <td>{j.agentId}</td>
                      {admin && <td>{j.userId}</td>}
                      <td>{describeSchedule(j)}</td>
                      <td>{j.runRequested ? "now (asked)" : formatTime(j.nextRunAt)}</td>
                      <td>{delivery(j)}</td>
                      <td class="wrap">{j.prompt}</td>
                      <td>
                        <div class="actions">
                          <button type="button" class="small" disabled={action.busy} onClick={() => void runNow(j)} aria-label={`Run ${j.id} now`}>Run now</button>
                          <button type="button" class="small" onClick={() => setShown(j)} aria-label={`History of ${j.id}`}>History</button>
                          <button type="button" class="small danger" onClick={() => setRemoving(j)} aria-label={`Remove ${j.id}`}>Remove</button>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      {shown !== undefined && <History key={shown.id} job={shown} onClose={() => setShown(undefined)} onRefresh={jobs.reload} />}
      <form class="card" onSubmit={(e) => void add(e)} aria-labelledby="add-job">
        <h2 id="add-job">Add a job</h2>
        <div class="grid">
          <Field label="Agent">
            {(id) => (
              <select id={id} name="agent" required>
                {(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.name !== "" && a.name !== a.id ? `${a.name} (${a.id})` : a.id}</option>)}
              </select>
            )}
          </Field>
          <Field label="Session" hint="reuse: one conversation for every run; new: a fresh one each run">
            {(id) => (
              <select id={id} name="sessionMode">
                <option value="reuse">reuse</option>
                <option value="new">new</option>
              </select>
            )}
          </Field>
          <Field label="Missed runs" hint="While the gateway was down">
            {(id) => (
              <select id={id} name="catchUp">
                <option value="">as the setting says</option>
                <option value="run">run once</option>
                <option value="skip">skip</option>
              </select>
            )}
          </Field>
        </div>
        <fieldset>
          <legend>When</legend>
          {KINDS.map((k) => (
            <label class="choice" key={k.kind}>
              <input type="radio" name="kind" value={k.kind} checked={kind === k.kind} onChange={() => setKind(k.kind)} />
              {k.label}
            </label>
          ))}
          <div class="grid">
            <Field label={chosen?.field ?? "When"} hint={chosen?.hint}>
              {(id) => (kind === "at" ? <input id={id} name="when" key="at" type="datetime-local" required /> : <input id={id} name="when" key={kind} required />)}
            </Field>
            {kind !== "every" && (
              <Field label="Time zone" hint="An IANA name; empty: UTC">{(id) => <input id={id} name="tz" defaultValue={localZone()} />}</Field>
            )}
          </div>
        </fieldset>
        <Field label="Prompt" hint="What the agent is asked at each run (at most 4,000 characters)">
          {(id) => <textarea id={id} name="prompt" rows={3} maxLength={4000} required />}
        </Field>
        {admin ? (
          <div class="grid">
            <Field label="Deliver to" hint="USER or USER@CHANNEL: the owner, who gets each answer">{(id) => <input id={id} name="deliver" />}</Field>
            <Field label="Owner" hint="When nothing is delivered (answers stored only)">{(id) => <input id={id} name="user" />}</Field>
          </div>
        ) : (
          <fieldset>
            <legend>Answers</legend>
            <label class="choice">
              <input type="checkbox" checked={deliver} onChange={(e) => setDeliver(e.currentTarget.checked)} />
              Send me each answer
            </label>
            {deliver && (
              <Field label="On">
                {(id) => (
                  <select id={id} name="channel">
                    <option value="">where I wrote last</option>
                    {PUSH_CHANNELS.map((c) => <option key={c} value={c}>{c}</option>)}
                  </select>
                )}
              </Field>
            )}
          </fieldset>
        )}
        <button type="submit" class="primary" disabled={action.busy}>Add job</button>
      </form>
    </Page>
  )
}
