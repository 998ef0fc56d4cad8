import {
  createTraceState,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api'

/** A W3C `traceparent`: version 00, trace id, parent span id, flags. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The longest `tracestate` stored (W3C Trace Context's minimum to propagate). */
const MAX_TRACESTATE = 512

/** What is stored of a span's context: the W3C Trace Context headers only (never baggage). */
interface StoredCarrier {
  traceparent: string
  tracestate?: string
}

/**
 * The stored form (JSON text) of `span`'s context, for a run's row: the W3C `traceparent` and
 * `tracestate` as `propagation.inject` writes them (the host's propagator), else as the W3C
 * Trace Context spec formats them (no propagator registered). Baggage is never kept (it may
 * carry what the host put there about the person). `null` for a span that records nothing.
 */
export function carrierOf(span: Span): string | null {
  const spanContext = span.spanContext()
  if (!isSpanContextValid(spanContext)) return null
  const injected: Record<string, string> = {}
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), injected)
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')
  const traceparent = TRACEPARENT.test(injected.traceparent ?? '')
    ? injected.traceparent
    : `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`
  const state = injected.tracestate ?? spanContext.traceState?.serialize()
  // W3C Trace Context: 512 characters of `tracestate` are what every vendor keeps; a longer one
  // is left out (the column holds 1024 characters), never cut mid-member.
  const tracestate = state && state.length <= MAX_TRACESTATE ? state : undefined
  const carrier: StoredCarrier = { traceparent, ...(tracestate ? { tracestate } : {}) }
  return JSON.stringify(carrier)
}

/**
 * The context a stored carrier names (a remote parent: the run's root span), through the
 * host's propagator (`propagation.extract`), else parsed as W3C Trace Context. `null` for no
 * carrier or one that cannot be read (a span made under it is then a root of its own trace:
 * tracing never fails a run).
 */
export function contextOf(stored: string | null | undefined): Context | null {
  if (!stored) return null
  let carrier: StoredCarrier
  try {
    carrier = JSON.parse(stored)
  } catch {
    return null
  }
  if (typeof carrier?.traceparent !== 'string') return null
  const headers = {
    traceparent: carrier.traceparent,
    ...(carrier.tracestate ? { tracestate: carrier.tracestate } : {}),
  }
  const extracted = propagation.extract(ROOT_CONTEXT, headers)
  if (
    isSpanContextValid(
      trace.getSpanContext(extracted) ?? { traceId: '', spanId: '', traceFlags: 0 }
    )
  ) {
    return extracted
  }
  const match = TRACEPARENT.exec(carrier.traceparent)
  if (!match) return null
  const spanContext = {
    traceId: match[1],
    spanId: match[2],
    traceFlags: Number.parseInt(match[3], 16),
    isRemote: true,
    ...(carrier.tracestate ? { traceState: createTraceState(carrier.tracestate) } : {}),
  }
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : null
}
