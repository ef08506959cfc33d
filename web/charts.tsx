/**
 * Small hand-written SVG charts (no chart library: two chart kinds did not justify one). Colours
 * come from CSS classes (the CSP allows no inline style attributes); each chart carries a text
 * alternative and its numbers in a table for screen readers.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { formatNumber } from "./ui.tsx"

export interface Series {
  readonly name: string
  /** A CSS class giving the colour: s1, s2, s3. */
  readonly tone: "s1" | "s2" | "s3"
  readonly values: ReadonlyArray<number>
}

const H = 200
const PAD = { left: 48, right: 12, top: 12, bottom: 28 }

const niceMax = (max: number) => {
  if (max <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(max))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= max) return m * p
  return 10 * p
}
const short = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}k` : String(Math.round(n * 100) / 100))

/** The width of an element in CSS pixels, followed as it changes (the charts draw at their real size, so text is never stretched). */
const useWidth = (fallback: number) => {
  const ref = useRef<HTMLDivElement>(null)
  const [width, setWidth] = useState(fallback)
  useEffect(() => {
    const el = ref.current
    if (el === null) return
    const observer = new ResizeObserver((entries) => {
      const w = Math.round(entries[0]?.contentRect.width ?? 0)
      if (w > 0) setWidth(w)
    })
    observer.observe(el)
    return () => observer.disconnect()
  }, [])
  return [ref, width] as const
}

/** Lines over labelled buckets (time). */
export const LineChart = (props: { readonly title: string; readonly labels: ReadonlyArray<string>; readonly series: ReadonlyArray<Series> }) => {
  const [box, W] = useWidth(640)
  const n = props.labels.length
  const top = Math.max(0, ...props.series.flatMap((s) => s.values))
  // Small counts (turns) get whole-number ticks: 0, 1, 2 — never 0.5 of a turn.
  const small = top <= 4 && props.series.every((s) => s.values.every(Number.isInteger))
  const max = small ? Math.max(1, top) : niceMax(top)
  const x = (i: number) => PAD.left + (n <= 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (n - 1))
  const y = (v: number) => PAD.top + (H - PAD.top - PAD.bottom) * (1 - v / max)
  const ticks = small ? Array.from({ length: max + 1 }, (_, i) => i) : [0, 0.25, 0.5, 0.75, 1].map((f) => f * max)
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(W / 70))))
  const total = props.series.map((s) => `${s.name}: ${formatNumber(s.values.reduce((a, b) => a + b, 0))}`).join(", ")
  return (
    <figure class="chart">
      <figcaption>
        {props.title}
        <span class="legend">
          {props.series.map((s) => (
            <span key={s.name} class={`key ${s.tone}`}>{s.name}</span>
          ))}
        </span>
      </figcaption>
      <div ref={box}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={`${props.title}. Totals: ${total}`}>
        {ticks.map((t) => (
          <g key={t}>
            <line class="grid" x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} />
            <text class="axis" x={PAD.left - 6} y={y(t) + 4} text-anchor="end">{short(t)}</text>
          </g>
        ))}
        {props.labels.map((l, i) =>
          i % every === 0 ? (
            <text key={l} class="axis" x={x(i)} y={H - 8} text-anchor="middle">{l}</text>
          ) : null
        )}
        {props.series.map((s) => (
          <g key={s.name} class={`series ${s.tone}`}>
            <polyline points={s.values.map((v, i) => `${x(i)},${y(v)}`).join(" ")} />
            {s.values.map((v, i) => (v > 0 ? <circle key={i} cx={x(i)} cy={y(v)} r="3" /> : null))}
          </g>
        ))}
      </svg>
      </div>
      <DataTable title={props.title} labels={props.labels} series={props.series} />
    </figure>
  )
}

/** Horizontal bars, one per labelled value (e.g. tokens by user). */
export const BarChart = (props: {
  readonly title: string
  readonly items: ReadonlyArray<{ readonly label: string; readonly value: number; readonly text?: string | undefined }>
  readonly unit: string
}) => {
  // Scaled to the largest (costs are often fractions of a dollar); all 0: empty bars.
  const top = Math.max(0, ...props.items.map((i) => i.value))
  const max = top > 0 ? top : 1
  return (
    <figure class="chart bars">
      <figcaption>{props.title}</figcaption>
      {props.items.length === 0 ? (
        <p class="muted">Nothing yet.</p>
      ) : (
        <ul>
          {props.items.map((i) => (
            <li key={i.label}>
              <span class="bar-label">{i.label}</span>
              <svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">
                <rect class="s1" x="0" y="0" height="10" width={Math.max(0.5, (100 * i.value) / max)} />
              </svg>
              <span class="bar-value">{i.text ?? `${formatNumber(i.value)} ${props.unit}`}</span>
            </li>
          ))}
        </ul>
      )}
    </figure>
  )
}

const DataTable = (props: { readonly title: string; readonly labels: ReadonlyArray<string>; readonly series: ReadonlyArray<Series> }) => (
  <table class="sr-only">
    <caption>{props.title}</caption>
    <thead>
      <tr><th scope="col">When</th>{props.series.map((s) => <th scope="col" key={s.name}>{s.name}</th>)}</tr>
    </thead>
    <tbody>
      {props.labels.map((l, i) => (
        <tr key={l}><th scope="row">{l}</th>{props.series.map((s) => <td key={s.name}>{s.values[i] ?? 0}</td>)}</tr>
      ))}
    </tbody>
  </table>
)
