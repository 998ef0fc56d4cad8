import { test } from '@japa/runner'
import { SpanStatusCode } from '@opentelemetry/api'
import { ThreadTakenError } from '../src/store/door_runs.js'
import { StreamExistsError } from '../src/store/stream_store.js'
import { setupParking } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { attributeText, installTracing, type PlainSpan } from './helpers/tracing.js'

/**
 * Issue 25, what an SRE reads from the root span of a start that never ran: a client's repeated
 * POST (the run id taken), a thread claimed by someone else or a turn taken are refusals, not
 * agent failures (an error-rate alert on `invoke_agent` spans must not fire on them); a start
 * whose open failed is an error with the error's stable code, never its text. Was: every one a
 * failed span with `error.type=run_failed`.
 */

function rootsOf(spans: PlainSpan[], id: string) {
  return spans.filter(
    (span) => span.name === 'invoke_agent agent' && span.attributes['agent_stream.run_id'] === id
  )
}

test.group('Traces: a start refused or failed before it ran', () => {
  test('the run id taken, or the thread: the root span is refused, not an error', async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const { driver } = await setupParking({ steps: [] })
    const id = runId('refused')
    await (
      await driver.start({ runId: id, fresh: true })
    ).done
    // The same run id again (a client's repeated POST): nothing opened.
    await assert.rejects(() => driver.start({ runId: id, fresh: true }), StreamExistsError)
    // Another owner's claim on the thread landed first.
    const other = runId('taken')
    await assert.rejects(
      () =>
        driver.start({
          runId: other,
          fresh: true,
          within: async () => {
            throw new ThreadTakenError()
          },
        }),
      ThreadTakenError
    )
    const spans = tracing.spans()
    const [ran, repeated] = rootsOf(spans, id)
    assert.equal(ran.attributes['agent_stream.outcome'], 'finished')
    assert.deepInclude(repeated.attributes, {
      'agent_stream.outcome': 'refused',
      'agent_stream.refused': 'stream_exists',
    })
    assert.notProperty(repeated.attributes, 'error.type')
    assert.equal(repeated.status.code, SpanStatusCode.UNSET)
    const [taken] = rootsOf(spans, other)
    assert.deepInclude(taken.attributes, {
      'agent_stream.outcome': 'refused',
      'agent_stream.refused': 'thread_taken',
    })
    assert.equal(taken.status.code, SpanStatusCode.UNSET)
  })

  test("an open that failed: status ERROR, the error's stable code, never its text", async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const { driver } = await setupParking({ steps: [] })
    const id = runId('open-failed')
    const failing = Object.assign(new Error('secret-person leaked team@example.com'), {
      code: 'E_HOST_REFUSED',
    })
    await assert.rejects(
      () =>
        driver.start({
          runId: id,
          within: async () => {
            throw failing
          },
        }),
      /secret-person/
    )
    const [root] = rootsOf(tracing.spans(), id)
    assert.equal(root.status.code, SpanStatusCode.ERROR)
    assert.isUndefined(root.status.message)
    assert.deepInclude(root.attributes, {
      'agent_stream.outcome': 'failed',
      'error.type': 'E_HOST_REFUSED',
    })
    const text = attributeText([root]).join('\n')
    assert.notInclude(text, 'secret-person')
    assert.notInclude(text, 'team@example.com')
  })
})
