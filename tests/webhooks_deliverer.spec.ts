import { test } from '@japa/runner'
import { defineConfig } from '../src/define_config.js'
import { InvalidWebhookConfigError } from '../src/errors.js'
import { resolveWebhooks, WebhookDeliverer } from '../src/telemetry/webhooks/index.js'
import { setupParking, setupRunner } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { FAST, newSecret, outbox, signedReceiver, until, hookedStack } from './helpers/webhooks.js'

/**
 * Issue 25, the deliverer as an SRE runs it: a rolling deploy (replicas whose configs name
 * different endpoints) and the retention of delivered rows under load.
 */

test.group('Webhooks | an endpoint this replica does not know', () => {
  test('a replica whose config lacks the endpoint leaves the row to one that has it', async ({
    assert,
  }) => {
    const secret = newSecret()
    const receiver = await signedReceiver(secret)
    // The new replica's config names the endpoint; the old one (still running) does not.
    const stack = await setupParking(
      { steps: [] },
      { webhooks: { ...FAST, maxAttempts: 3, endpoints: [{ url: receiver.url, secret }] } }
    )
    const id = runId()
    await (
      await stack.driver.start({ runId: id })
    ).done
    await stack.driver.settled()
    const old = new WebhookDeliverer(
      stack.webhooks!.deliveries,
      resolveWebhooks({
        ...FAST,
        maxAttempts: 3,
        endpoints: [{ url: 'http://127.0.0.1:9/elsewhere', secret: newSecret() }],
      })!,
      { holder: 'old-replica' }
    )
    await old.runOnce()
    const rows = await outbox(stack.db, id)
    assert.isAbove(rows.length, 0)
    // Not a dead letter: due again later, for a replica that knows the endpoint.
    assert.deepEqual([...new Set(rows.map((row: any) => row.status))], ['pending'])
    assert.isTrue(rows.every((row: any) => row.last_error === 'endpoint_removed'))
    stack.webhooks!.deliverer.start()
    await until(async () =>
      (await outbox(stack.db, id)).every((row: any) => row.status === 'delivered')
    )
    await stack.webhooks!.deliverer.stop()
    assert.lengthOf(receiver.received, rows.length)
  })

  test('an endpoint removed from every config: dead after maxAttempts, endpoint_removed', async ({
    assert,
  }) => {
    const { receiver, stack } = await hookedStack({ maxAttempts: 2 })
    const id = runId()
    await (
      await stack.driver.start({ runId: id })
    ).done
    await stack.driver.settled()
    const removed = new WebhookDeliverer(
      stack.webhooks!.deliveries,
      resolveWebhooks({
        ...FAST,
        maxAttempts: 2,
        endpoints: [{ url: 'http://127.0.0.1:9/elsewhere', secret: newSecret() }],
      })!
    )
    removed.start()
    await until(async () => (await outbox(stack.db, id)).every((row: any) => row.status === 'dead'))
    await removed.stop()
    const rows = await outbox(stack.db, id)
    assert.isTrue(rows.every((row: any) => row.last_error === 'endpoint_removed'))
    assert.isTrue(rows.every((row: any) => Number(row.attempts) === 2))
    assert.lengthOf(receiver.received, 0)
  })
})

test.group('Webhooks | retention under load', () => {
  test('every delivered row past the retention goes, not 500 a minute', async ({ assert }) => {
    const { receiver, stack } = await hookedStack({ retentionMs: 1000 })
    const streamRunId = runId()
    const rows = Array.from({ length: 1200 }, (_, i) => ({
      id: `msg_${i.toString(16).padStart(32, '0')}`,
      event_type: 'run.finished',
      endpoint: receiver.url,
      stream_run_id: streamRunId,
      run_id: streamRunId,
      payload: '{}',
      status: 'delivered',
      attempts: 1,
      next_attempt_at: 1,
      created_at: 1,
      updated_at: 1,
      delivered_at: 1,
    }))
    for (let i = 0; i < rows.length; i += 100) {
      await stack.db
        .connection()
        .table('agent_webhook_deliveries')
        .multiInsert(rows.slice(i, i + 100))
    }
    // One round (its retention sweep runs with it, once a minute).
    await stack.webhooks!.deliverer.runOnce()
    assert.lengthOf(await outbox(stack.db, streamRunId), 0)
  })
})

test.group('Webhooks | config errors name the field as the config spells it', () => {
  test('defineConfig: maxBackoff under backoff names "maxBackoff" and a duration', ({ assert }) => {
    const endpoints = [{ url: 'https://hooks.example.com/x', secret: newSecret() }]
    let thrown: any
    try {
      defineConfig({ webhooks: { endpoints, backoff: '10s', maxBackoff: '5s' } })
    } catch (error) {
      thrown = error
    }
    assert.instanceOf(thrown, InvalidWebhookConfigError)
    assert.equal(
      thrown.message,
      'Invalid "webhooks" config: "maxBackoff" must be a duration of at least 10000 ms'
    )
    // A fraction of a millisecond is not refused as "not an integer".
    assert.doesNotThrow(() => defineConfig({ webhooks: { endpoints, timeout: '1.5ms' } }))
    // createRuntime's options keep their own names.
    assert.throws(
      () => resolveWebhooks({ endpoints, backoffMs: 10_000, maxBackoffMs: 5000 }),
      '"maxBackoffMs" must be a duration of at least 10000 ms'
    )
  })
})

test.group('Webhooks | a park of many items', () => {
  test('a run.parked payload past 64 KB is stored whole (MariaDB TEXT would refuse the park)', async ({
    assert,
  }) => {
    const secret = newSecret()
    const receiver = await signedReceiver(secret)
    const items = 300
    const stack = await setupRunner(
      {
        async start(ctx) {
          for (let i = 0; i < items; i++) {
            await ctx.writer.write({
              t: 'approval',
              runId: ctx.runId,
              id: `call_${i}_${'x'.repeat(120)}`,
              toolName: `tool_${'y'.repeat(60)}`,
              input: { n: i },
            })
          }
          return { status: 'parked', checkpoint: {} }
        },
        resume: async () => ({ status: 'finished' }),
      },
      { webhooks: { ...FAST, endpoints: [{ url: receiver.url, secret, events: ['run.parked'] }] } }
    )
    const id = runId()
    assert.equal((await (await stack.driver.start({ runId: id })).done).status, 'parked')
    stack.webhooks!.deliverer.start()
    const [parked] = await receiver.wait((r) => r.event.type === 'run.parked')
    await stack.webhooks!.deliverer.stop()
    assert.isAbove(parked.raw.length, 65_535)
    assert.lengthOf(parked.event.data.items, items)
  })
})

test.group('Webhooks | what a park pages for', () => {
  test('run.parked names only the items still waiting (one decided before the park committed is not paged)', async ({
    assert,
  }) => {
    const secret = newSecret()
    const receiver = await signedReceiver(secret)
    let asked!: () => void
    const askedBoth = new Promise<void>((resolve) => (asked = resolve))
    let go!: () => void
    const gate = new Promise<void>((resolve) => (go = resolve))
    const stack = await setupRunner(
      {
        async start(ctx) {
          for (const id of ['call_a', 'call_b']) {
            await ctx.writer.write({
              t: 'approval',
              runId: ctx.runId,
              id,
              toolName: 'pay',
              input: { id },
            })
          }
          await ctx.writer.flush?.()
          asked()
          await gate
          return { status: 'parked', checkpoint: {} }
        },
        resume: async () => ({ status: 'finished' }),
      },
      { webhooks: { ...FAST, endpoints: [{ url: receiver.url, secret }] } }
    )
    const id = runId()
    const principal = { id: 'payer' }
    const { done } = await stack.driver.start({ runId: id, principal })
    await askedBoth
    // Decided while the segment still runs: before its park commits.
    await stack.parking.decisions.approve(id, 'call_a', { principal, via: 'chat' })
    go()
    assert.equal((await done).status, 'parked')
    stack.webhooks!.deliverer.start()
    const [parked] = await receiver.wait((r) => r.event.type === 'run.parked')
    await stack.webhooks!.deliverer.stop()
    assert.deepEqual(
      parked.event.data.items.map((item: { itemId: string }) => item.itemId),
      ['call_b']
    )
  })
})
