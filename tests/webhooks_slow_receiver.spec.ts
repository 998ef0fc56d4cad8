import { test } from '@japa/runner'
import { createServer } from 'node:http'
import { listen } from './helpers/durable_door.js'
import { setupParking } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { FAST, newSecret, signedReceiver } from './helpers/webhooks.js'

/**
 * Issue 25, what an SRE expects of the deliverer: a receiver that hangs (answers nothing until
 * each attempt's timeout) slows its own deliveries only. Was: a round claimed the 16 oldest due
 * rows of every endpoint and waited for all of them, so each round lasted the hanging
 * receiver's timeout and every other endpoint got at most a round's share per timeout.
 */
test.group('Webhooks | a hanging receiver', () => {
  test('does not hold back the deliveries of another endpoint', async ({ assert, cleanup }) => {
    const hanging = createServer(() => {})
    const hangingUrl = `http://127.0.0.1:${await listen(hanging)}/hook`
    cleanup(async () => {
      hanging.closeAllConnections()
      await new Promise((resolve) => hanging.close(resolve))
    })
    const secret = newSecret()
    const healthy = await signedReceiver(secret)
    const timeoutMs = 1500
    const stack = await setupParking(
      { steps: [] },
      {
        webhooks: {
          ...FAST,
          timeoutMs,
          maxAttempts: 1,
          endpoints: [
            { url: hangingUrl, secret: newSecret() },
            { url: healthy.url, secret },
          ],
        },
      }
    )
    // 24 events for each endpoint, all due now, the two endpoints' rows interleaved.
    const streamRunId = runId('hol')
    const payload = (i: number) =>
      JSON.stringify({
        type: 'run.finished',
        timestamp: new Date().toISOString(),
        data: { runId: streamRunId, i },
      })
    const rows = Array.from({ length: 48 }, (_, i) => ({
      id: `msg_${(i + 1).toString(16).padStart(32, '0')}`,
      event_type: 'run.finished',
      endpoint: i % 2 === 0 ? hangingUrl : healthy.url,
      stream_run_id: streamRunId,
      run_id: streamRunId,
      payload: payload(i),
      status: 'pending',
      attempts: 0,
      next_attempt_at: 1 + i,
      created_at: 1 + i,
      updated_at: 1 + i,
    }))
    await stack.db.connection().table('agent_webhook_deliveries').multiInsert(rows)
    const started = Date.now()
    stack.webhooks!.deliverer.start()
    cleanup(() => stack.webhooks!.deliverer.stop())
    // Every healthy delivery lands well within one attempt's timeout of the hanging one.
    await healthy.wait((r) => r.event.data.runId === streamRunId, 24, timeoutMs * 4)
    const took = Date.now() - started
    assert.isBelow(took, timeoutMs, `the healthy endpoint's 24 deliveries took ${took} ms`)
    assert.lengthOf(healthy.received, 24)
  }).timeout(30_000)
})
