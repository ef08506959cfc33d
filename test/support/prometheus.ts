/**
 * Reading a `/metrics` answer as Prometheus would, with `parse-prometheus-text-format` (a parser of
 * the text exposition format from npm, not ours): `families` is the document as it parses it (each
 * family's name, help and type; it throws on a malformed line), `series` every sample with its labels.
 *
 * That parser folds a histogram's series into one and drops their labels (its `flattenMetrics` keeps
 * only unlabelled `_sum`/`_count`), so `series` parses the document again with the histograms' TYPE
 * lines left out: each `_bucket`, `_sum` and `_count` sample is then a series of its own with its
 * labels, which is how Prometheus stores a histogram.
 */
import parse, { type Family, type HistogramSample, type Sample } from "parse-prometheus-text-format"

export interface Scrape {
  readonly families: ReadonlyArray<Family>
  readonly series: ReadonlyArray<{ readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly value: number }>
}

const isHistogram = (s: Sample | HistogramSample): s is HistogramSample => "buckets" in s

export const parseMetrics = (text: string): Scrape => {
  const families = parse(text)
  const histograms = new Set(families.filter((f) => f.type === "HISTOGRAM").map((f) => f.name))
  const untyped = text.split("\n").filter((line) => {
    const typed = /^# TYPE (\S+) histogram$/.exec(line)
    return typed === null || !histograms.has(typed[1] ?? "")
  }).join("\n")
  const series = parse(untyped).flatMap((f) =>
    f.metrics.flatMap((s) => (isHistogram(s) ? [] : [{ name: f.name, labels: s.labels ?? {}, value: Number(s.value) }]))
  )
  return { families, series }
}

/** The Prometheus type of the family `name` (undefined when it is not there). */
export const typeOf = (scrape: Scrape, name: string): Family["type"] | undefined => scrape.families.find((f) => f.name === name)?.type

/** The value of the series `name` with (at least) `labels`; 0 when it is not there yet. */
export const value = (scrape: Scrape, name: string, labels: Readonly<Record<string, string>> = {}): number =>
  scrape.series.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value ?? 0

/** The observation count of the histogram `name` with `labels` (its `_count` series). */
export const histogramCount = (scrape: Scrape, name: string, labels: Readonly<Record<string, string>> = {}): number =>
  value(scrape, `${name}_count`, labels)

/** Every label of every series, as `name=value`. */
export const allLabels = (scrape: Scrape): ReadonlyArray<string> =>
  scrape.series.flatMap((s) => Object.entries(s.labels).map(([k, v]) => `${k}=${v}`))
