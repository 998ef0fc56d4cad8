import { test } from '@japa/runner'
import type { WebhooksOptions } from '../src/telemetry/webhooks/index.js'
import type { ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { setupParking } from './helpers/parking.js'
import { runId, sleep } from './helpers/sink.js'
import {
  FAST,
  newSecret,
  outbox,
  signedReceiver,
  typesOf,
  until,
  hookedStack,
} from './helpers/webhooks.js'

/**
 * Issue 25, webhooks from an outbox: delivery against real HTTP receivers on loopback, each
 * attempt verified with the reference library (`standardwebhooks`' `Webhook.verify`).
 * The events themselves (which change writes which, and none on a rollback): webhooks_events.spec.ts.
 */

const alice = { id: 'alice' }

/** The parking stack with one signed receiver, its deliverer started (stopped at the end). */
async function withReceiver(
  agent: ScriptedAgentOptions,
  webhooks: Partial<WebhooksOptions> = {},
  status?: (index: number) => number,
  events?: WebhooksOptions['endpoints'][number]['events']
) {
  const secret = newSecret()
  const receiver = await signedReceiver(secret, status)
  const stack = await setupParking(agent, {
    webhooks: { ...FAST, ...webhooks, endpoints: [{ url: receiver.url, secret, events }] },
  })
  stack.webhooks!.deliverer.start()
  return { ...stack, receiver, secret }
}
test.group('Webhooks | lifecycle events, signed, from the outbox', () => {
  test('a parked, approved, resumed run: each event signed and verified by standardwebhooks', async ({
    assert,
  }) => {
    const { driver, parking, receiver, webhooks } = await withReceiver({ steps: ['approval'] })
    const id = runId()
    await (
      await driver.start({ runId: id, threadId: 't-hooks', principal: alice })
    ).done
    const [parked] = await receiver.wait((r) => r.event.type === 'run.parked')
    await parking.decisions.approve(id, `${id}.call0`, { principal: alice, via: 'chat' })
    await driver.settled()
    await receiver.wait((r) => r.event.type === 'run.finished')
    assert.sameMembers(typesOf(receiver.received, id), [
      'run.started',
      'run.parked',
      'run.decided',
      'run.resumed',
      'run.finished',
    ])
    assert.deepEqual(receiver.refused, [])
    for (const r of receiver.received) {
      assert.match(r.id, /^msg_[0-9a-f]{32}$/)
      assert.match(r.headers['webhook-signature'], /^v1,/)
      assert.deepInclude(r.event.data, {
        runId: id,
        streamRunId: id,
        threadId: 't-hooks',
        agent: 'agent',
      })
      // Nothing secret: no tool input, no confirmation text, no checkpoint, no principal object.
      for (const secret of ['team@example.com', 'Weekly report', 'checkpoint', 'roles', 'Emails']) {
        assert.notInclude(r.raw, secret)
      }
    }
    assert.deepInclude(parked.event.data, { status: 'parked', park: 1 })
    assert.deepEqual(parked.event.data.items, [
      {
        itemId: `${id}.call0`,
        kind: 'approval',
        toolName: 'send_email',
        approver: 'requester',
        expiresAt: null,
        consolePath: `/agent-stream/admin/items/${encodeURIComponent(id)}/${encodeURIComponent(`${id}.call0`)}?park=1`,
      },
    ])
    const decided = receiver.received.find((r) => r.event.type === 'run.decided')!
    assert.deepInclude(decided.event.data, {
      decision: 'approved',
      via: 'chat',
      decidedBy: 'alice',
      park: 1,
    })
    assert.isString(decided.event.timestamp)
    assert.isNotNull(webhooks)
  })

  test('a rotating secret: every attempt signed with each, the old and the new verify', async ({
    assert,
  }) => {
    const [previous, next] = [newSecret(), newSecret()]
    // The receiver still has the old secret.
    const receiver = await signedReceiver(previous)
    const stack = await setupParking(
      { steps: [] },
      {
        webhooks: {
          ...FAST,
          endpoints: [{ url: receiver.url, secret: [next, previous], events: ['run.finished'] }],
        },
      }
    )
    stack.webhooks!.deliverer.start()
    const id = runId()
    await (
      await stack.driver.start({ runId: id })
    ).done
    const [got] = await receiver.wait((r) => r.event.data.runId === id)
    assert.lengthOf(got.headers['webhook-signature'].split(' '), 2)
    // And one with the new secret verifies the same request.
    const { Webhook } = await import('standardwebhooks')
    assert.deepEqual(new Webhook(next).verify(got.raw, got.headers), got.event)
    assert.throws(() => new Webhook(newSecret()).verify(got.raw, got.headers))
  })

  test('a receiver failing three times gets the event once more each time, then never again', async ({
    assert,
  }) => {
    const { driver, receiver, db } = await withReceiver(
      { steps: [] },
      {},
      (index) => (index < 3 ? 500 : 200),
      ['run.finished']
    )
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    const attempts = await receiver.wait((r) => r.event.data.runId === id, 4)
    await sleep(300)
    assert.lengthOf(receiver.received, 4)
    assert.lengthOf(new Set(attempts.map((r) => r.id)), 1)
    assert.lengthOf(new Set(attempts.map((r) => r.raw)), 1)
    const [row] = await outbox(db, id)
    assert.equal(row.status, 'delivered')
    assert.equal(Number(row.attempts), 4)
    assert.isNull(row.last_error)
    assert.isNull(row.lease_holder)
  })

  test('after maxAttempts the delivery is dead with the status code; a retry delivers it', async ({
    assert,
  }) => {
    let accept = false
    const { driver, receiver, db, webhooks } = await withReceiver(
      { steps: [] },
      { maxAttempts: 3 },
      () => (accept ? 204 : 503),
      ['run.finished']
    )
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    await receiver.wait(() => true, 3)
    await until(async () => (await outbox(db, id))[0]?.status === 'dead')
    await sleep(200)
    assert.lengthOf(receiver.received, 3)
    const [row] = await outbox(db, id)
    assert.equal(row.last_error, 'http_503')
    assert.equal(Number(row.attempts), 3)
    const dead = await webhooks!.deliveries.dead(10)
    assert.deepEqual(
      dead.map((d) => d.id),
      [row.id]
    )
    accept = true
    assert.isTrue(await webhooks!.deliveries.retry(row.id))
    assert.isFalse(await webhooks!.deliveries.retry(row.id))
    webhooks!.deliverer.wake()
    await until(async () => (await outbox(db, id))[0]?.status === 'delivered')
    assert.lengthOf(receiver.received, 4)
    assert.equal(receiver.received[3].id, row.id)
  })

  test('a timeout and a refused connection are failures with their codes', async ({ assert }) => {
    const { createServer } = await import('node:http')
    const { listen } = await import('./helpers/durable_door.js')
    // A receiver that never answers: every attempt times out.
    const silent = createServer(() => {})
    const silentPort = await listen(silent)
    // A port nobody listens on any more: the connection is refused.
    const gone = createServer()
    const gonePort = await listen(gone)
    await new Promise((resolve) => gone.close(resolve))
    const stack = await setupParking(
      { steps: [] },
      {
        webhooks: {
          ...FAST,
          timeoutMs: 100,
          maxAttempts: 1,
          endpoints: [
            {
              url: `http://127.0.0.1:${silentPort}/hook`,
              secret: newSecret(),
              events: ['run.finished'],
            },
            {
              url: `http://127.0.0.1:${gonePort}/hook`,
              secret: newSecret(),
              events: ['run.finished'],
            },
          ],
        },
      }
    )
    stack.webhooks!.deliverer.start()
    const id = runId()
    await (
      await stack.driver.start({ runId: id })
    ).done
    await until(async () => (await outbox(stack.db, id)).every((row: any) => row.status === 'dead'))
    const codes = Object.fromEntries(
      (await outbox(stack.db, id)).map((row: any) => [row.endpoint, row.last_error])
    )
    assert.deepEqual(codes, {
      [`http://127.0.0.1:${silentPort}/hook`]: 'timeout',
      [`http://127.0.0.1:${gonePort}/hook`]: 'connection_refused',
    })
    silent.closeAllConnections()
    silent.close()
  })
})
test.group('Webhooks | purged with their run, or after their retention', () => {
  test('a purge of the run removes its deliveries; delivered rows go after the retention', async ({
    assert,
  }) => {
    const { stack } = await hookedStack()
    stack.webhooks!.deliverer.start()
    const [first, second] = [runId(), runId()]
    for (const id of [first, second]) await (await stack.driver.start({ runId: id })).done
    await until(async () =>
      (await outbox(stack.db, first)).every((row: any) => row.status === 'delivered')
    )
    await until(async () =>
      (await outbox(stack.db, second)).every((row: any) => row.status === 'delivered')
    )
    await sleep(5)
    // Both streams ended: a purge of everything ended before now takes their deliveries too.
    await stack.sink.purge({ olderThanMs: 0 })
    assert.lengthOf(await outbox(stack.db, second), 0)
    assert.lengthOf(await outbox(stack.db, first), 0)
    // Retention: delivered rows older than it are deleted, pending and dead ones first.
    const other = runId()
    await (
      await stack.driver.start({ runId: other })
    ).done
    await until(async () =>
      (await outbox(stack.db, other)).every((row: any) => row.status === 'delivered')
    )
    await stack.db
      .connection()
      .from('agent_webhook_deliveries')
      .where('stream_run_id', other)
      .where('event_type', 'run.started')
      .update({ status: 'dead', delivered_at: null })
    await sleep(5)
    const { nowMs } = await import('../src/store/sql.js')
    assert.equal(await stack.webhooks!.deliveries.purgeDelivered(nowMs(), 100), 1)
    assert.deepEqual(
      (await outbox(stack.db, other)).map((row: any) => row.status),
      ['dead']
    )
  })
})
test.group('Webhooks | one replica at a time', () => {
  test('two replicas delivering the same outbox: every webhook-id received once', async ({
    assert,
  }) => {
    const secret = newSecret()
    // A slow receiver: attempts of both replicas overlap.
    const receiver = await signedReceiver(secret)
    const slow = (await import('node:http')).createServer((req, res) => {
      req.resume()
      req.on('end', () => setTimeout(() => res.writeHead(204).end(), 30))
    })
    const { listen } = await import('./helpers/durable_door.js')
    const slowUrl = `http://127.0.0.1:${await listen(slow)}/hook`
    const webhooks = {
      ...FAST,
      endpoints: [
        { url: receiver.url, secret },
        { url: slowUrl, secret },
      ],
    }
    const one = await setupParking({ steps: [] }, { webhooks, replicaId: 'one' })
    const { setupReplica } = await import('./helpers/parking.js')
    const { scriptedAgent } = await import('../src/testing/scripted_agent.js')
    const two = setupReplica(scriptedAgent({ steps: [] }), { webhooks, replicaId: 'two' })
    const ids = Array.from({ length: 8 }, () => runId())
    // One after the other (two SQLite connections of one process must not hold write
    // transactions at once); then only the deliverers' single statements race.
    for (const [i, id] of ids.entries()) {
      const replica = i % 2 ? one : two
      await (
        await replica.driver.start({ runId: id })
      ).done
      await replica.driver.settled()
    }
    one.webhooks!.deliverer.start()
    two.webhooks!.deliverer.start()
    await receiver.wait(() => true, ids.length * 2)
    await until(async () => {
      const rows = await one.db.connection().from('agent_webhook_deliveries').select('status')
      return rows.length === ids.length * 4 && rows.every((r: any) => r.status === 'delivered')
    })
    await sleep(200)
    assert.lengthOf(receiver.received, ids.length * 2)
    assert.lengthOf(new Set(receiver.received.map((r) => r.id)), ids.length * 2)
    const attempts = await one.db.connection().from('agent_webhook_deliveries').select('attempts')
    assert.isTrue(attempts.every((r: any) => Number(r.attempts) === 1))
    await one.webhooks!.deliverer.stop()
    await two.webhooks!.deliverer.stop()
    slow.closeAllConnections()
    slow.close()
  })
})
test.group('Webhooks | a replica killed between its commit and the delivery', () => {
  test('kill -9 after the commit: another replica delivers the event exactly once', async ({
    assert,
  }) => {
    const secret = newSecret()
    const receiver = await signedReceiver(secret)
    const webhooks = {
      ...FAST,
      endpoints: [
        { url: receiver.url, secret, events: ['run.started' as const, 'run.failed' as const] },
      ],
    }
    // The tables fresh, this replica's deliverer not started yet.
    const here = await setupParking({ steps: ['approval'] }, { webhooks, leaseMs: 300 })
    const { Replica } = await import('./helpers/replica.js')
    const replica = await Replica.start({ webhooks, leaseMs: 300 } as any, {
      script: 'parking',
      agent: { steps: ['approval'] },
    })
    const id = runId()
    replica.call({ op: 'startThenDie', runId: id }).catch(() => {})
    await new Promise((resolve) => replica.child.once('exit', resolve))
    assert.equal(replica.child.signalCode, 'SIGKILL')
    // Committed by the dead replica, delivered by nobody yet.
    const [row] = await outbox(here.db, id)
    assert.equal(row.status, 'pending')
    assert.equal(Number(row.attempts), 0)
    assert.lengthOf(receiver.received, 0)
    here.webhooks!.deliverer.start()
    const [delivered] = await receiver.wait((r) => r.event.data.runId === id)
    await sleep(300)
    assert.lengthOf(
      receiver.received.filter((r) => r.event.data.runId === id),
      1
    )
    assert.equal(delivered.id, row.id)
    assert.equal(delivered.event.type, 'run.started')
    assert.equal((await outbox(here.db, id))[0].status, 'delivered')

    // Its writer is dead: once the lease lapsed, this replica fails the stream, `run.failed`
    // written with that end (the thread read from the stored segment).
    await sleep(400)
    await here.sink.settleLapsed(id)
    const [failed] = await receiver.wait((r) => r.event.type === 'run.failed')
    assert.deepInclude(failed.event.data, {
      runId: id,
      streamRunId: id,
      threadId: id,
      status: 'failed',
      code: 'run_failed',
    })
    await here.sink.settleLapsed(id)
    await sleep(200)
    assert.lengthOf(
      receiver.received.filter((r) => r.event.type === 'run.failed'),
      1
    )
  })
})
