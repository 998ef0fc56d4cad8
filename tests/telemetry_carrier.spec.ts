import { test } from '@japa/runner'
import { createTraceState, propagation, trace, ROOT_CONTEXT } from '@opentelemetry/api'
import { carrierOf, contextOf } from '../src/telemetry/traces/carrier.js'
import { installTracing } from './helpers/tracing.js'

test.group('Traces: the stored trace context', () => {
  test('W3C traceparent and tracestate round-trip; baggage is never kept', async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const span = tracing.tracer.startSpan('root')
    const withState = trace.setSpanContext(ROOT_CONTEXT, {
      ...span.spanContext(),
      traceState: createTraceState('vendor=abc'),
    })
    const baggage = propagation.setBaggage(
      withState,
      propagation.createBaggage({ user: { value: 'secret-person' } })
    )
    const stored = carrierOf(trace.wrapSpanContext(trace.getSpanContext(baggage)!))!
    assert.notInclude(stored, 'secret-person')
    const carrier = JSON.parse(stored)
    assert.deepEqual(Object.keys(carrier).sort(), ['traceparent', 'tracestate'])
    assert.equal(carrier.tracestate, 'vendor=abc')
    const parent = trace.getSpanContext(contextOf(stored)!)!
    assert.equal(parent.traceId, span.spanContext().traceId)
    assert.equal(parent.spanId, span.spanContext().spanId)
    assert.isTrue(parent.isRemote)
    span.end()
  })

  test('a tracestate past 512 characters is left out; nothing stored for a span that records nothing', async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const span = tracing.tracer.startSpan('root')
    const long = Array.from({ length: 40 }, (_, i) => `v${i}=${'x'.repeat(12)}`).join(',')
    const context = { ...span.spanContext(), traceState: createTraceState(long) }
    const stored = carrierOf(trace.wrapSpanContext(context))!
    assert.isBelow(stored.length, 1024)
    assert.notProperty(JSON.parse(stored), 'tracestate')
    assert.isNull(
      carrierOf(
        trace.wrapSpanContext({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 })
      )
    )
    span.end()
  })

  test('without a propagator registered, the traceparent is still written and read', async ({
    assert,
  }) => {
    // No SDK, no propagator: a span context given by hand.
    const spanContext = {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
    }
    const stored = carrierOf(trace.wrapSpanContext(spanContext))!
    assert.equal(
      JSON.parse(stored).traceparent,
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    )
    const parent = trace.getSpanContext(contextOf(stored)!)!
    assert.equal(parent.spanId, spanContext.spanId)
    assert.isNull(contextOf('not json'))
    assert.isNull(contextOf(JSON.stringify({ traceparent: '01-zz' })))
    assert.isNull(contextOf(null))
  })
})
