/**
 * Types of `parse-prometheus-text-format` (it ships none): the Prometheus text format parsed into
 * prom2json's shape, every value as the text it had.
 */
declare module "parse-prometheus-text-format" {
  export interface Sample {
    readonly value: string
    readonly labels?: Readonly<Record<string, string>>
  }
  export interface HistogramSample {
    readonly buckets: Readonly<Record<string, string>>
    readonly count: string
    readonly sum: string
    readonly labels?: Readonly<Record<string, string>>
  }
  export interface Family {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<Sample | HistogramSample>
  }
  const parse: (text: string) => Array<Family>
  export default parse
}
