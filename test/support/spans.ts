/** A tracer that keeps every span it makes (Effect's native spans), for tests of what spans say. */
import { Tracer } from "effect"

export const recordingTracer = (): { readonly tracer: Tracer.Tracer; readonly spans: Array<Tracer.NativeSpan> } => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { tracer, spans }
}
