import { test } from '@japa/runner'
import { readFile } from 'node:fs/promises'
import { ATTRIBUTE, METRIC } from '../src/telemetry/metrics/index.js'
import { installMeterProvider } from './helpers/otel_metrics.js'
import { setupParking } from './helpers/parking.js'
import { runId, sleep } from './helpers/sink.js'
import { FAST, newSecret, outbox, signedReceiver, until } from './helpers/webhooks.js'

/**
 * Issue 25, what an SRE running the outbox expects to alert on: every webhook attempt counted by
 * event and result (`delivered`, `failed`, `dead`: a dead letter is a metric, not only a row the
 * console shows), and the time from an event's commit to its delivery. Against a real receiver
 * on loopback and a real MeterProvider, on the three databases.
 */

const finished = { [ATTRIBUTE.webhookEvent]: 'run.finished' }

async function stackWith(status: (index: number) => number, maxAttempts: number) {
  const secret = newSecret()
  const receiver = await signedReceiver(secret, status)
  const stack = await setupParking(
    { steps: [] },
    {
      webhooks: {
        ...FAST,
        maxAttempts,
        endpoints: [{ url: receiver.url, secret, events: ['run.finished'] }],
      },
    }
  )
  stack.webhooks!.deliverer.start()
  return { ...stack, receiver }
}

test.group('Webhooks | metrics of the deliverer', () => {
  test('a receiver failing three times: 3 failed attempts, 1 delivered, its delay recorded', async ({
    assert,
  }) => {
    const meter = installMeterProvider()
    const { driver, receiver, db, webhooks } = await stackWith((i) => (i < 3 ? 500 : 200), 8)
    const id = runId('hook-metrics')
    await (
      await driver.start({ runId: id })
    ).done
    await receiver.wait((r) => r.event.data.runId === id, 4)
    await until(async () => (await outbox(db, id))[0]?.status === 'delivered')
    await webhooks!.deliverer.stop()
    const attempts = (result: string) =>
      meter.value(METRIC.webhookAttempts, { ...finished, [ATTRIBUTE.webhookResult]: result })
    assert.equal(await attempts('failed'), 3)
    assert.equal(await attempts('delivered'), 1)
    assert.equal(await attempts('dead'), 0)
    const [row] = await outbox(db, id)
    const delay = await meter.histogram(METRIC.webhookDelay, finished)
    assert.equal(delay.count, 1)
    // From the event's commit (its row's created_at) to the delivery (its delivered_at), the
    // three failed attempts and their backoff included.
    const stored = (Number(row.delivered_at) - Number(row.created_at)) / 1000
    assert.isAbove(stored, 0)
    assert.closeTo(delay.sum, stored, 0.25)
  })

  test('a delivery given up on counts as dead (a dead letter to alert on)', async ({ assert }) => {
    const meter = installMeterProvider()
    const { driver, receiver, db, webhooks } = await stackWith(() => 503, 2)
    const id = runId('hook-dead')
    await (
      await driver.start({ runId: id })
    ).done
    await until(async () => (await outbox(db, id))[0]?.status === 'dead')
    await sleep(100)
    await webhooks!.deliverer.stop()
    assert.lengthOf(receiver.received, 2)
    const attempts = (result: string) =>
      meter.value(METRIC.webhookAttempts, { ...finished, [ATTRIBUTE.webhookResult]: result })
    assert.equal(await attempts('failed'), 1)
    assert.equal(await attempts('dead'), 1)
    assert.equal(await attempts('delivered'), 0)
    assert.equal((await meter.histogram(METRIC.webhookDelay)).count, 0)
    // Low cardinality: the event type and the result, never a run, an endpoint or an id.
    for (const metric of await meter.collect()) {
      if (!metric.descriptor.name.startsWith('agent_stream.webhook.')) continue
      for (const point of metric.dataPoints) {
        assert.includeMembers(
          [ATTRIBUTE.webhookEvent, ATTRIBUTE.webhookResult],
          Object.keys(point.attributes)
        )
        assert.notInclude(JSON.stringify(point.attributes), id)
      }
    }
  })
})

test.group('Metrics | named and documented in the README with their units', () => {
  test('every metric the package records has a README row with its instrument and unit', async ({
    assert,
  }) => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    const docs = await readFile(new URL('../docs/observability.md', import.meta.url), 'utf8')
    for (const name of Object.values(METRIC)) {
      // The README's metrics table: `| \`name\` (what) | instrument | \`unit\` |` (a status row
      // may name it too).
      const table =
        /^\s*\|[^|]*`NAME`[^|]*\|\s*(Counter|UpDownCounter|Histogram|ObservableGauge)\s*\|\s*`[^`]+`\s*\|/
      const row = new RegExp(table.source.replace('NAME', name.replaceAll('.', '\\.')))
      assert.isTrue(
        readme.split('\n').some((line) => row.test(line)),
        `${name} in the README's metrics table with its instrument and unit`
      )
      assert.include(docs, `| \`${name}\` |`, `${name} in docs/observability.md#metrics`)
    }
  })
})
