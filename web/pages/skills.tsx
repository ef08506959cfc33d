/**
 * Skills (`/api/skills`): the operator's skills, global or one agent's, ranked as the agents' search
 * ranks them (Thompson sampling over each skill's successes and failures). An admin installs (a
 * folder or tarball on the gateway's host, a git or tarball URL) and removes; a user sees, read-only,
 * the skills of the agents open to them, and their own ranked skills. Names and descriptions are
 * shown as text.
 */
import { useState } from "preact/hooks"
import type { RankedSkillView, SkillView } from "../../src/domain/admin/groups/skills.ts"
import { call } from "../api.ts"
import { isAdmin } from "../state.ts"
import { Field, Notice, Page, Show, useAction, useLoad } from "../ui.tsx"

type Skill = typeof SkillView.Type
type Ranked = typeof RankedSkillView.Type
type By = "sample" | "mean" | "ucb"

const loadAgents = () =>
  isAdmin.value
    ? call((c) => c.agents.list()).then((as) => as.map((a) => a.id))
    : call((c) => c.chat.agents()).then((as) => as.map((a) => a.id))

const scopeOf = (s: { readonly scope: string; readonly agent?: string | null }) => (s.scope === "agent" ? `agent ${s.agent ?? ""}` : s.scope)

const AgentSelect = (props: { readonly id: string; readonly name: string; readonly agents: ReadonlyArray<string>; readonly none?: string; readonly value?: string; readonly onChange?: (v: string) => void }) => (
  <select id={props.id} name={props.name} value={props.value} onChange={(e) => props.onChange?.(e.currentTarget.value)}>
    {props.none !== undefined && <option value="">{props.none}</option>}
    {props.agents.map((a) => <option key={a} value={a}>{a}</option>)}
  </select>
)

const RankTable = (props: { readonly rows: ReadonlyArray<Ranked> }) =>
  props.rows.length === 0 ? <p class="muted">No skill matches.</p> : (
    <div class="table-wrap">
      <table>
        <caption class="sr-only">Skills ranked</caption>
        <thead>
          <tr>
            <th scope="col">Rank</th><th scope="col">Skill</th><th scope="col">Scope</th><th scope="col">Successes</th>
            <th scope="col">Failures</th><th scope="col">α</th><th scope="col">β</th><th scope="col">Score</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={`${r.scope}:${r.name}`}>
              <td>{r.rank}</td>
              <th scope="row">{r.name}</th>
              <td>{r.scope === "user" ? "yours" : r.scope}</td>
              <td>{r.successes}</td>
              <td>{r.failures}</td>
              <td>{r.alpha}</td>
              <td>{r.beta}</td>
              <td>{r.score.toFixed(4)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )

export const Skills = () => {
  const admin = isAdmin.value
  const [agent, setAgent] = useState("")
  const list = useLoad(() => call((c) => c.skills.list({ query: agent === "" ? {} : { agent } })), [agent])
  const agents = useLoad(loadAgents)
  const action = useAction()
  const [note, setNote] = useState<string | undefined>(undefined)
  const [ranked, setRanked] = useState<ReadonlyArray<Ranked> | undefined>(undefined)
  const [removing, setRemoving] = useState<Skill | undefined>(undefined)

  const install = async (e: Event) => {
    e.preventDefault()
    const form = e.currentTarget as HTMLFormElement
    const f = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    setNote(undefined)
    const installed = await action.run(() =>
      call((c) =>
        c.skills.install({
          payload: { source: (f["source"] ?? "").trim(), ...((f["agent"] ?? "") === "" ? {} : { agent: f["agent"] ?? "" }), force: f["force"] === "on" }
        })
      )
    )
    if (installed !== undefined) {
      setNote(`Installed ${installed.map((s) => `${s.name} (${scopeOf(s)})`).join(", ")}.`)
      form.reset()
      list.reload()
    }
  }
  const remove = async (s: Skill) => {
    setRemoving(undefined)
    setNote(undefined)
    const r = await action.run(() => call((c) => c.skills.remove({ params: { name: s.name }, query: s.agent === null ? {} : { agent: s.agent } })))
    if (r !== undefined) setNote(`Removed ${r.name} (${scopeOf(r)}).`)
    list.reload()
  }
  const rank = async (e: Event) => {
    e.preventDefault()
    const f = Object.fromEntries(new FormData(e.currentTarget as HTMLFormElement).entries()) as Record<string, string>
    const q = (f["q"] ?? "").trim()
    const user = (f["user"] ?? "").trim()
    const rows = await action.run(() =>
      call((c) =>
        c.skills.rank({
          query: {
            ...((f["agent"] ?? "") === "" ? {} : { agent: f["agent"] ?? "" }),
            ...(q === "" ? {} : { q }),
            by: (f["by"] ?? "sample") as By,
            ...(admin && user !== "" ? { user } : {})
          }
        })
      )
    )
    if (rows !== undefined) setRanked(rows)
  }

  const agentIds = agents.data ?? []
  return (
    <Page title="Skills">
      <p class="muted">
        {admin
          ? "Instructions for kinds of tasks, offered to agents: global ones to every agent, an agent's own to it (shadowing a global one of the same name)."
          : "The skills the agents you may use offer, and how well they worked."}
      </p>
      <Notice error={action.error} done={note} />
      {removing !== undefined && (
        <section class="card" role="alertdialog" aria-labelledby="remove-skill">
          <h2 id="remove-skill">Remove skill {removing.name} ({scopeOf(removing)})?</h2>
          <div class="actions">
            <button type="button" class="danger" disabled={action.busy} onClick={() => void remove(removing)}>Remove</button>
            <button type="button" onClick={() => setRemoving(undefined)}>Cancel</button>
          </div>
        </section>
      )}
      <div class="filters">
        <Field label="Show the skills of">
          {(id) => <AgentSelect id={id} name="show" agents={agentIds} none={admin ? "every agent" : "every agent I may use"} value={agent} onChange={setAgent} />}
        </Field>
      </div>
      <Show loaded={list}>
        {(ss) =>
          ss.length === 0 ? <p class="muted">No skill installed{agent === "" ? "" : ` that ${agent} sees`}.</p> : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Skills</caption>
                <thead>
                  <tr>
                    <th scope="col">Skill</th><th scope="col">Scope</th><th scope="col">Description</th>
                    {admin && <th scope="col">Folder</th>}
                    {admin && <th scope="col"><span class="sr-only">Actions</span></th>}
                  </tr>
                </thead>
                <tbody>
                  {ss.map((s) => (
                    <tr key={`${s.agent ?? ""}/${s.name}`}>
                      <th scope="row">{s.name}</th>
                      <td>{scopeOf(s)}</td>
                      <td class="wrap">{s.description}</td>
                      {admin && <td class="wrap"><code>{s.path ?? ""}</code></td>}
                      {admin && (
                        <td>
                          <button type="button" class="small danger" onClick={() => setRemoving(s)} aria-label={`Remove skill ${s.name} (${scopeOf(s)})`}>Remove</button>
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
      <form class="card" onSubmit={(e) => void rank(e)} aria-labelledby="rank-skills">
        <h2 id="rank-skills">Rank</h2>
        <p class="muted">In the order the agent's search gives them: a draw from each skill's Beta(successes + 1, failures + 1), or its mean or upper confidence bound.</p>
        <div class="inline">
          <Field label="Agent">{(id) => <AgentSelect id={id} name="agent" agents={agentIds} {...(admin ? { none: "global skills (every agent's counts)" } : {})} />}</Field>
          <Field label="Words">{(id) => <input id={id} name="q" placeholder="e.g. pdf" />}</Field>
          <Field label="Order">
            {(id) => (
              <select id={id} name="by">
                <option value="sample">sample (as the search)</option>
                <option value="mean">mean</option>
                <option value="ucb">upper confidence bound</option>
              </select>
            )}
          </Field>
          {admin && <Field label="With the own skills of user">{(id) => <input id={id} name="user" />}</Field>}
          <button type="submit" disabled={action.busy}>Rank</button>
        </div>
        {ranked !== undefined && <RankTable rows={ranked} />}
      </form>
      {admin && (
        <form class="card" onSubmit={(e) => void install(e)} aria-labelledby="install-skill">
          <h2 id="install-skill">Install</h2>
          <p class="muted">
            As <code>anna skill install</code>, run by the gateway: a folder or .tar/.tgz file on its host (an absolute path), a git URL
            (<code>#ref</code>, <code>#ref:folder</code>) or a tarball URL. All or nothing; links are refused.
          </p>
          <div class="grid">
            <Field label="Source">{(id) => <input id={id} name="source" required placeholder="https://github.com/acme/skills.git" />}</Field>
            <Field label="For">{(id) => <AgentSelect id={id} name="agent" agents={agentIds} none="every agent (global)" />}</Field>
          </div>
          <label class="choice">
            <input type="checkbox" name="force" />
            Replace an installed skill of the same name
          </label>
          <button type="submit" class="primary" disabled={action.busy}>Install</button>
        </form>
      )}
    </Page>
  )
}
