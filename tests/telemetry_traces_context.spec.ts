import { test } from '@japa/runner'
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api'
import { setupParking } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { installTracing } from './helpers/tracing.js'

/**
 * Issue 25, traces: what a segment's span is a child of when the run has no stored trace
 * context (it started before an SDK was installed: a deploy that turns tracing on). It is a
 * root of its own trace (docs/observability.md), never a child of whatever span happens to be
 * active where the resume began (the deciding request's, or another run's).
 */

const person = { id: 'someone', roles: ['ops'] }

test.group('Traces: no context leaks into a run without a stored one', () => {
  test('a resume of a run started untraced is a root, not a child of the deciding request', async ({
    assert,
    cleanup,
  }) => {
    // Started with no SDK: nothing stored.
    const { driver, parking, db } = await setupParking({ steps: ['approval'] })
    const id = runId('untraced')
    assert.equal(
      (await (await driver.start({ runId: id, principal: person })).done).status,
      'parked'
    )
    const row = await db.connection().from('agent_streams').where('run_id', id).first()
    assert.isNull(row.trace_context)
    // Then an SDK; the decision lands inside a request's span.
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const request = tracing.tracer.startSpan('POST /decide')
    await context.with(trace.setSpan(ROOT_CONTEXT, request), () =>
      parking.decisions.approve(id, `${id}.call0`, { principal: person, via: 'chat' })
    )
    await driver.settled()
    request.end()
    const resumed = tracing.spans().filter((span) => span.name.startsWith('invoke_agent'))
    assert.lengthOf(resumed, 1)
    assert.notEqual(resumed[0].traceId, request.spanContext().traceId)
    assert.isNull(resumed[0].parentSpanId)
  })
})
