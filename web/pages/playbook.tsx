/**
 * The playbook (`/api/playbook`). An admin picks a playbook (the global one or an agent's), filters
 * its rules, gives feedback, promotes and removes them, reviews the inversion proposals of rules that
 * keep failing and applies the chosen ones, and sweeps. A user sees "My rules": their own and the
 * shared rules the agents open to them give them (their own view of those), and removes their own.
 * Rule texts come from users and models: shown as text, never as HTML.
 */
import { useState } from "preact/hooks"
import type { RuleView } from "../../src/domain/admin/groups/playbook.ts"
import { call } from "../api.ts"
import { href, isAdmin, me, navigate } from "../state.ts"
import { Field, Notice, Page, Show, formatTime, useAction, useLoad } from "../ui.tsx"

type Rule = RuleView

/** Where a rule lives, as the API's `agent` query takes it. */
const at = (agent: string | null) => (agent === null ? {} : { agent })
const whereLabel = (agent: string | null) => (agent === null ? "global" : agent)

export const Playbook = (props: { readonly args: ReadonlyArray<string> }) => {
  const [view, id, agent] = props.args
  return view === "rule" && id !== undefined ? <RuleDetailView id={id} agent={agent} /> : <RuleList />
}

/** The playbooks to pick from: every agent for an admin (and the global one), the agents open to a user. */
const usePlaybooks = () =>
  useLoad(async () =>
    isAdmin.value
      ? (await call((c) => c.agents.list())).map((a) => a.id)
      : (await call((c) => c.chat.agents())).map((a) => a.id)
  )

const RuleList = () => {
  const admin = isAdmin.value
  const playbooks = usePlaybooks()
  // An admin starts on the global playbook; a user on all the agents open to them.
  const [filters, setFilters] = useState({ agent: "", user: "", tag: "", q: "", scope: "" })
  const list = useLoad(
    () =>
      call((c) =>
        c.playbook.list({
          query: {
            ...(filters.agent !== "" ? { agent: filters.agent } : {}),
            ...(admin && filters.user !== "" ? { user: filters.user } : {}),
            ...(filters.tag !== "" ? { tag: filters.tag } : {}),
            ...(filters.q !== "" ? { q: filters.q } : {}),
            ...(filters.scope === "shared" || filters.scope === "personal" ? { scope: filters.scope } : {})
          }
        })
      ),
    [filters]
  )
  const action = useAction()
  const apply = (e: Event) => {
    e.preventDefault()
    const f = Object.fromEntries(new FormData(e.currentTarget as HTMLFormElement).entries()) as Record<string, string>
    setFilters({ agent: f["agent"] ?? "", user: (f["user"] ?? "").trim(), tag: (f["tag"] ?? "").trim(), q: (f["q"] ?? "").trim(), scope: f["scope"] ?? "" })
  }
  const remove = async (r: Rule) => {
    const done = await action.run(() => call((c) => c.playbook.remove({ params: { id: r.id }, query: at(r.agent) })), `Rule ${r.id} removed.`)
    if (done !== undefined) list.reload()
  }
  const feedback = async (r: Rule, outcome: "good" | "bad") => {
    const done = await action.run(
      () => call((c) => c.playbook.feedback({ params: { id: r.id }, payload: { ...at(r.agent), outcome } })),
      `Rule ${r.id}: ${outcome} recorded for everyone it is for.`
    )
    if (done !== undefined) list.reload()
  }
  const promote = async (r: Rule) => {
    if (r.agent === null) return
    const agentId = r.agent
    const done = await action.run(() => call((c) => c.playbook.promote({ params: { id: r.id }, payload: { agent: agentId } })), `Rule ${r.id} now applies to every user of ${agentId}.`)
    if (done !== undefined) list.reload()
  }
  const mine = (r: Rule) => r.user !== null && r.user === me.value?.user
  return (
    <Page title={admin ? "Playbook" : "My rules"}>
      <p class="muted">
        {admin
          ? "Rules learned from experience, injected into agents' prompts by their tags. The global playbook applies to every agent; an agent's own rules shadow a global rule of the same id."
          : "The rules the agents open to you follow when they talk with you: your own (learned from your conversations) and those for every user, with your own feedback counted in."}
      </p>
      <Notice error={action.error} done={action.done} />
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <Field label="Playbook">
          {(fid) => (
            <select id={fid} name="agent">
              <option value="">{admin ? "global" : "all my agents"}</option>
              {(playbooks.data ?? []).map((a) => <option key={a} value={a}>{admin ? `agent ${a}` : a}</option>)}
            </select>
          )}
        </Field>
        {admin && <Field label="Given to user">{(fid) => <input id={fid} name="user" />}</Field>}
        <Field label="Tag">{(fid) => <input id={fid} name="tag" />}</Field>
        <Field label="Words">{(fid) => <input id={fid} name="q" type="search" />}</Field>
        <Field label="Scope">
          {(fid) => (
            <select id={fid} name="scope">
              <option value="">any</option>
              <option value="shared">for every user</option>
              <option value="personal">{admin ? "for one user" : "mine"}</option>
            </select>
          )}
        </Field>
        <button type="submit">Filter</button>
      </form>
      <Show loaded={list}>
        {(rules) =>
          rules.length === 0 ? <p class="muted" role="status">No rule matches.</p> : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Rules</caption>
                <thead>
                  <tr>
                    <th scope="col">Rule</th><th scope="col">Where</th><th scope="col">For</th><th scope="col">Maturity</th>
                    <th scope="col">Confidence</th><th scope="col">Successes / failures</th><th scope="col">Tags</th>
                    <th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {rules.map((r) => (
                    <tr key={`${r.agent ?? ""}/${r.id}`} data-rule={r.id}>
                      <th scope="row">
                        {r.antiPattern && <span class="badge">avoid</span>} <span class="rule-text">{r.text}</span>
                        <br /><a href={r.agent === null ? href("playbook", "rule", r.id) : href("playbook", "rule", r.id, r.agent)}><code>{r.id}</code></a>
                      </th>
                      <td>{whereLabel(r.agent)}</td>
                      <td>{r.user === null ? "every user" : mine(r) ? "you" : r.user}</td>
                      <td>{r.maturity}</td>
                      <td>{r.confidenceNow.toFixed(2)}</td>
                      <td>{r.successCount} / {r.failureCount}</td>
                      <td>{r.tags.join(", ") || "—"}</td>
                      <td>
                        <div class="actions">
                          {admin && (
                            <>
                              <button type="button" class="small" disabled={action.busy} onClick={() => void feedback(r, "good")} aria-label={`Rule ${r.id} helped`}>Good</button>
                              <button type="button" class="small" disabled={action.busy} onClick={() => void feedback(r, "bad")} aria-label={`Rule ${r.id} hurt`}>Bad</button>
                              {r.user !== null && r.agent !== null && (
                                <button type="button" class="small" disabled={action.busy} onClick={() => void promote(r)} aria-label={`Promote rule ${r.id} to every user`}>Promote</button>
                              )}
                            </>
                          )}
                          {(admin || mine(r)) && (
                            <button type="button" class="danger small" disabled={action.busy} onClick={() => void remove(r)} aria-label={`Remove rule ${r.id}`}>Remove</button>
                          )}
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
      </Show>
      {admin && <Maintenance agent={filters.agent} onChange={list.reload} key={filters.agent} />}
    </Page>
  )
}

/** Review and apply inversion proposals, and sweep, for one playbook (the admin's). */
const Maintenance = (props: { readonly agent: string; readonly onChange: () => void }) => {
  const query = props.agent === "" ? {} : { agent: props.agent }
  const review = useLoad(() => call((c) => c.playbook.review({ query })), [props.agent])
  const [chosen, setChosen] = useState<ReadonlySet<string>>(new Set())
  const action = useAction()
  const [swept, setSwept] = useState<string | undefined>(undefined)
  const which = props.agent === "" ? "the global playbook" : `agent ${props.agent}'s playbook`
  const applyChosen = async () => {
    const ids = [...chosen]
    const done = await action.run(() => call((c) => c.playbook.apply({ payload: { ...query, ids } })), `Applied ${ids.length} proposal${ids.length === 1 ? "" : "s"}.`)
    if (done !== undefined) {
      setChosen(new Set())
      review.reload()
      props.onChange()
    }
  }
  const sweep = async () => {
    setSwept(undefined)
    const r = await action.run(() => call((c) => c.playbook.sweep({ payload: query })))
    if (r !== undefined) {
      setSwept(
        `Swept ${which}: ${r.promoted} promoted, ${r.demoted} demoted, ${r.flagged} flagged. ` +
          `Demotion candidates: ${r.demotionCandidates.join(", ") || "none"}. Removal candidates: ${r.removalCandidates.join(", ") || "none"}.`
      )
      props.onChange()
    }
  }
  return (
    <section class="card" aria-labelledby="proposals-title">
      <h2 id="proposals-title">Inversion proposals</h2>
      <p class="muted">Rules of {which} that keep failing, each with the AVOID rule proposed in its place. Nothing changes until you apply them.</p>
      <Notice error={action.error} done={swept ?? action.done} />
      <Show loaded={review}>
        {(proposals) =>
          proposals.length === 0 ? <p class="muted" role="status">No proposal.</p> : (
            <>
              <ul class="plain proposals">
                {proposals.map((p) => (
                  <li key={p.id}>
                    <label class="choice">
                      <input
                        type="checkbox"
                        checked={chosen.has(p.id)}
                        onChange={(e) => {
                          const next = new Set(chosen)
                          if (e.currentTarget.checked) next.add(p.id)
                          else next.delete(p.id)
                          setChosen(next)
                        }}
                      />
                      <span>Invert <code>{p.id}</code> ({p.failures} failures, {p.successes} successes)</span>
                    </label>
                    <div class="proposal">
                      <div><span class="muted">now: </span><span class="rule-text">{p.text}</span></div>
                      <div><span class="muted">proposed: </span><span class="rule-text">{p.inverted.text}</span></div>
                    </div>
                  </li>
                ))}
              </ul>
              <button type="button" class="primary" disabled={action.busy || chosen.size === 0} onClick={() => void applyChosen()}>Apply chosen</button>
            </>
          )}
      </Show>
      <h2>Sweep</h2>
      <p class="muted">Settles maturities against the confidence after decay and lists rules to demote or remove (a running gateway does it daily).</p>
      <button type="button" disabled={action.busy} onClick={() => void sweep()}>Sweep {which}</button>
    </section>
  )
}

const votesText = (v: { readonly success: number; readonly failure: number; readonly counted: number; readonly needed: number }) =>
  v.success + v.failure === 0
    ? "none yet"
    : `${v.failure} bad, ${v.success} good (each user's latest); ${v.counted} counted into the rule, which moves once ${v.needed} users agree`

const RuleDetailView = (props: { readonly id: string; readonly agent: string | undefined }) => {
  const query = props.agent === undefined ? {} : { agent: props.agent }
  const detail = useLoad(() => call((c) => c.playbook.show({ params: { id: props.id }, query })), [props.id, props.agent])
  const action = useAction()
  const remove = async (r: Rule) => {
    const done = await action.run(() => call((c) => c.playbook.remove({ params: { id: r.id }, query: at(r.agent) })))
    if (done !== undefined) navigate("playbook")
  }
  return (
    <Page title={`Rule ${props.id}`} actions={<a class="button" href={href("playbook")}>All rules</a>}>
      <Notice error={action.error} />
      <Show loaded={detail}>
        {(d) => {
          const r = d.rule
          return (
            <>
              <p class="rule-text lead">{r.text}</p>
              <dl class="facts">
                <div><dt>Where</dt><dd>{whereLabel(r.agent)}</dd></div>
                <div><dt>For</dt><dd>{r.user === null ? "every user" : r.user}</dd></div>
                <div><dt>Maturity</dt><dd>{r.maturity}</dd></div>
                <div><dt>Confidence</dt><dd>{r.confidence.toFixed(4)} stored, {r.confidenceNow.toFixed(4)} now</dd></div>
                <div><dt>Successes / failures</dt><dd>{r.successCount} / {r.failureCount}</dd></div>
                <div><dt>Pattern to avoid</dt><dd>{r.antiPattern ? "yes" : "no"}</dd></div>
                <div><dt>Tags</dt><dd>{r.tags.join(", ") || "—"}</dd></div>
                <div><dt>Created</dt><dd>{formatTime(r.createdAt)}</dd></div>
                <div><dt>Last applied</dt><dd>{formatTime(r.lastAppliedAt)}</dd></div>
                <div><dt>Users' feedback</dt><dd>{d.votes === null ? "applies to the rule (it is one user's own)" : votesText(d.votes)}</dd></div>
                {d.file !== null && <div><dt>File</dt><dd><code>{d.file}</code></dd></div>}
              </dl>
              <h2>Learned from</h2>
              {r.sourceEntries.length === 0 ? <p class="muted">No diary entry (written by hand or proposed in a chat).</p> : (
                // A shared rule may come from other users' entries: only an admin (or the rule's own user) can open them.
                <ul class="plain">
                  {r.sourceEntries.map((e) => <li key={e}>{isAdmin.value || r.user === me.value?.user ? <a href={href("diary", e)}><code>{e}</code></a> : <code>{e}</code>}</li>)}
                </ul>
              )}
              {(isAdmin.value || (r.user !== null && r.user === me.value?.user)) && (
                <button type="button" class="danger" disabled={action.busy} onClick={() => void remove(r)}>Remove this rule</button>
              )}
            </>
          )
        }}
      </Show>
    </Page>
  )
}
