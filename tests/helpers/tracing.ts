import { context, propagation, trace, type Attributes } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'

/** A finished span as plain JSON (what a second process sends back over IPC). */
export interface PlainSpan {
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId: string | null
  attributes: Attributes
  /** Epoch milliseconds (the SDK's high-resolution times, converted exactly). */
  startMs: number
  endMs: number
  status: { code: number; message?: string }
  scope: string
  /** The span ids this span links to. */
  links: string[]
}

const ms = ([seconds, nanos]: [number, number]) => seconds * 1000 + nanos / 1e6

/** One finished span as {@link PlainSpan}. */
export function plain(span: ReadableSpan): PlainSpan {
  return {
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    attributes: { ...span.attributes },
    startMs: ms(span.startTime),
    endMs: ms(span.endTime),
    status: { ...span.status },
    scope: span.instrumentationScope.name,
    links: span.links.map((link) => link.context.spanId),
  }
}

/**
 * The real OpenTelemetry SDK registered globally for this process: a `NodeTracerProvider` (the
 * AsyncLocalStorage context manager, the W3C propagator) exporting to an `InMemorySpanExporter`.
 * `uninstall()` shuts it down and disables the globals (a test calls it in its cleanup).
 */
export function installTracing() {
  const exporter = new InMemorySpanExporter()
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  provider.register()
  return {
    exporter,
    provider,
    tracer: provider.getTracer('test'),
    spans: () => exporter.getFinishedSpans().map(plain),
    async uninstall() {
      await provider.shutdown()
      trace.disable()
      context.disable()
      propagation.disable()
    },
  }
}

/** Every attribute value of `spans`, as text (what a secret scan reads). */
export function attributeText(spans: PlainSpan[]) {
  return spans.flatMap((span) => Object.values(span.attributes).map((value) => String(value)))
}
