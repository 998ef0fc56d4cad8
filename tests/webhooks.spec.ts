import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import { DecisionConflictError, InvalidWebhookConfigError } from '../src/errors.js'
import { resolveWebhooks, type WebhooksOptions } from '../src/telemetry/webhooks/index.js'
import { createRuntime } from '../src/runtime.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { defineConfig } from '../src/define_config.js'
import type { ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { setupParking, setupRunner } from './helpers/parking.js'
import { createDatabase } from './helpers/db.js'
import { runId, sleep } from './helpers/sink.js'
import { newSecret, signedReceiver, typesOf } from './helpers/webhooks.js'

const alice = { id: 'alice' }

/** The outbox rows of a stream, oldest first. */
async function outbox(db: Database, streamRunId: string) {
  return db
    .connection()
    .from('agent_webhook_deliveries')
    .where('stream_run_id', streamRunId)
    .orderBy('created_at', 'asc')
}

async function until(check: () => Promise<boolean> | boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}

/** Fast retries, for tests. */
const FAST: Partial<WebhooksOptions> = { backoffMs: 20, maxBackoffMs: 60, pollIntervalMs: 20 }

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

test.group('Webhooks | emitted by the change they report, never by one rolled back', () => {
  test('a decision that loses a race writes no run.decided', async ({ assert }) => {
    const { driver, parking, db } = await setupParking(
      { steps: ['approval'] },
      { webhooks: { endpoints: [{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }] } }
    )
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    const results = await Promise.allSettled([
      parking.decisions.approve(id, `${id}.call0`, { principal: alice }),
      parking.decisions.reject(id, `${id}.call0`, { principal: alice }),
    ])
    assert.lengthOf(
      results.filter((r) => r.status === 'rejected' && r.reason instanceof DecisionConflictError),
      1
    )
    await driver.settled()
    const rows = await outbox(db, id)
    assert.lengthOf(
      rows.filter((r: any) => r.event_type === 'run.decided'),
      1
    )
    assert.sameMembers(
      rows.map((r: any) => r.event_type),
      ['run.started', 'run.parked', 'run.decided', 'run.resumed', 'run.finished']
    )
  })

  test('a resume whose claim lapsed writes no run.resumed', async ({ assert }) => {
    const { driver, parking, parkingStore, db } = await setupParking(
      { steps: ['approval'] },
      { webhooks: { endpoints: [{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }] } }
    )
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    // Nobody here resumes on the decision: another replica claims the segment.
    driver.tryResume = async () => false
    await parking.decisions.approve(id, `${id}.call0`, { principal: alice })
    const claimed = await parkingStore.claims.claim(id, 1, 'another-replica', 30_000)
    assert.isNotNull(claimed)
    // This driver's resume finds the claim is not its own: the reopen rolls back.
    assert.isNull(await driver.resume(claimed!))
    const types = (await outbox(db, id)).map((r: any) => r.event_type)
    assert.deepEqual(types, ['run.started', 'run.parked', 'run.decided'])
  })

  test('a run lost to a database outage writes run.failed with its failure, once it is back', async ({
    assert,
  }) => {
    const { sink, db } = await setupParking(
      { steps: [] },
      {
        outageBoundMs: 300,
        coalesceWindowMs: 10,
        webhooks: { endpoints: [{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }] },
      }
    )
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'kept ' })
    await writer.flush()
    // The database away: every commit refused as a lost connection would be.
    const { store } = sinkInternals(sink)
    const commit = store.commit.bind(store)
    let down = true
    store.commit = async (...args: Parameters<typeof commit>) => {
      if (down) {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
          code: 'ECONNREFUSED',
        })
      }
      return commit(...args)
    }
    const lost = new Promise<void>((resolve) => (writer.onLost = resolve))
    await writer.write({ t: 'text', v: 'dropped' })
    await lost
    assert.lengthOf(await outbox(db, id), 0)
    down = false
    await until(async () => (await sink.head(id))?.status === 'failed')
    const rows = await outbox(db, id)
    assert.deepEqual(
      rows.map((r: any) => r.event_type),
      ['run.failed']
    )
    assert.deepInclude(JSON.parse(rows[0].payload).data, { code: 'run_failed', status: 'failed' })
  })

  test('a start whose own writes fail writes no run.started', async ({ assert }) => {
    const { driver, db } = await setupParking(
      { steps: [] },
      { webhooks: { endpoints: [{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }] } }
    )
    const id = runId()
    await assert.rejects(() =>
      driver.start({
        runId: id,
        within: async () => {
          throw new Error('the door record failed')
        },
      })
    )
    assert.lengthOf(await outbox(db, id), 0)
  })

  test('cancel, expiry, failure and a stop each write their event', async ({ assert }) => {
    const webhooks = {
      endpoints: [{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }],
    }
    // Cancelled while parked; a second cancel (a conflict) writes nothing more.
    const cancelled = await setupParking({ steps: ['approval'] }, { webhooks })
    const a = runId()
    await (
      await cancelled.driver.start({ runId: a, principal: alice })
    ).done
    await cancelled.parking.decisions.cancel(a, { principal: alice, via: 'admin' })
    await assert.rejects(() => cancelled.parking.decisions.cancel(a, { principal: alice }))
    const aRows = await outbox(cancelled.db, a)
    assert.deepEqual(
      aRows.map((r: any) => r.event_type),
      ['run.started', 'run.parked', 'run.cancelled']
    )
    assert.deepInclude(JSON.parse(aRows[2].payload).data, { via: 'admin', decidedBy: 'alice' })

    // An item that lapsed: the sweeper settles it, `run.expired` via `expiry`.
    const expiring = await setupParking(
      { steps: ['approval'], expiresInMs: 1 },
      { webhooks },
      false
    )
    const b = runId()
    await (
      await expiring.driver.start({ runId: b, principal: alice })
    ).done
    await sleep(20)
    await expiring.parking.sweeper.expireLapsed()
    await expiring.driver.settled()
    const bRows = await outbox(expiring.db, b)
    const expired = bRows.find((r: any) => r.event_type === 'run.expired')
    assert.deepInclude(JSON.parse(expired.payload).data, {
      decision: 'expired',
      via: 'expiry',
      decidedBy: null,
    })
    assert.notInclude(
      bRows.map((r: any) => r.event_type),
      'run.decided'
    )

    // A runner that throws: `run.failed` with the stable code (never the error's text).
    const failing = await setupParking({ steps: [], failAt: 'start' }, { webhooks }, false)
    const c = runId()
    await (
      await failing.driver.start({ runId: c })
    ).done
    const [, failed] = await outbox(failing.db, c)
    assert.equal(failed.event_type, 'run.failed')
    assert.deepInclude(JSON.parse(failed.payload).data, { status: 'failed', code: 'run_failed' })
    assert.notInclude(failed.payload, 'sk-live')

    // A talking run stopped: `run.cancelled` with its end.
    const held: AgentRunner = {
      start: (ctx) =>
        new Promise((resolve) =>
          ctx.signal.addEventListener('abort', () => resolve({ status: 'finished' }))
        ),
      resume: async () => ({ status: 'finished' }),
    }
    const stopping = await setupRunner(held, { webhooks })
    const d = runId()
    const { done } = await stopping.driver.start({ runId: d })
    await sleep(20)
    stopping.driver.stop(d)
    await done
    assert.deepEqual(
      (await outbox(stopping.db, d)).map((r: any) => r.event_type),
      ['run.started', 'run.cancelled']
    )
  })

  test('an endpoint gets only the events it names; no endpoint, no row', async ({ assert }) => {
    const only = await setupParking(
      { steps: ['approval'] },
      {
        webhooks: {
          endpoints: [
            { url: 'http://127.0.0.1:9/a', secret: newSecret(), events: ['run.parked'] },
            { url: 'http://127.0.0.1:9/b', secret: newSecret() },
          ],
        },
      }
    )
    const id = runId()
    await (
      await only.driver.start({ runId: id })
    ).done
    const rows = await outbox(only.db, id)
    assert.sameDeepMembers(
      rows.map((r: any) => [r.event_type, r.endpoint]),
      [
        ['run.started', 'http://127.0.0.1:9/b'],
        ['run.parked', 'http://127.0.0.1:9/a'],
        ['run.parked', 'http://127.0.0.1:9/b'],
      ]
    )
    assert.notEqual(rows[1].id, rows[2].id)
    const off = await setupParking({ steps: [] }, { webhooks: { endpoints: [] } }, false)
    assert.isNull(off.webhooks)
    const other = runId()
    await (
      await off.driver.start({ runId: other })
    ).done
    assert.lengthOf(await outbox(off.db, other), 0)
  })
})

test.group('Webhooks | purged with their run, or after their retention', () => {
  test('a purge of the run removes its deliveries; delivered rows go after the retention', async ({
    assert,
  }) => {
    const secret = newSecret()
    const receiver = await signedReceiver(secret)
    const stack = await setupParking(
      { steps: [] },
      { webhooks: { ...FAST, endpoints: [{ url: receiver.url, secret }] } }
    )
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

test.group('Webhooks | config refused at boot', () => {
  const refusals: [string, WebhooksOptions, string][] = [
    [
      'a URL that does not parse',
      { endpoints: [{ url: 'not a url', secret: newSecret() }] },
      'endpoints.0.url',
    ],
    [
      'a URL that is not http(s)',
      { endpoints: [{ url: 'ftp://example.com/x', secret: newSecret() }] },
      'endpoints.0.url',
    ],
    [
      'credentials in the URL',
      { endpoints: [{ url: 'https://u:p@example.com/x', secret: newSecret() }] },
      'endpoints.0.url',
    ],
    [
      'a secret without whsec_',
      { endpoints: [{ url: 'https://example.com/x', secret: 'hunter2-hunter2-hunter2-hunter2' }] },
      'endpoints.0.secret',
    ],
    [
      'a secret not base64',
      { endpoints: [{ url: 'https://example.com/x', secret: 'whsec_not base64!' }] },
      'endpoints.0.secret',
    ],
    [
      'a key too short',
      { endpoints: [{ url: 'https://example.com/x', secret: 'whsec_c2hvcnQ=' }] },
      'endpoints.0.secret',
    ],
    [
      'an unknown event',
      {
        endpoints: [
          { url: 'https://example.com/x', secret: newSecret(), events: ['run.exploded' as any] },
        ],
      },
      'endpoints.0.events.0',
    ],
    [
      'maxAttempts 0',
      { endpoints: [{ url: 'https://example.com/x', secret: newSecret() }], maxAttempts: 0 },
      'maxAttempts',
    ],
  ]
  for (const [name, options, field] of refusals) {
    test(`refused: ${name}`, async ({ assert }) => {
      let thrown: any
      try {
        resolveWebhooks(options)
      } catch (error) {
        thrown = error
      }
      assert.instanceOf(thrown, InvalidWebhookConfigError)
      assert.equal(thrown.code, 'invalid_webhook_config')
      assert.include(thrown.message, `"${field}"`)
      // The value is never echoed.
      assert.notInclude(thrown.message, options.endpoints[0].secret)
      assert.notInclude(thrown.message, options.endpoints[0].url)
      // The same rule at boot: defineConfig and createRuntime.
      assert.throws(() => defineConfig({ webhooks: options }), /invalid|Invalid/)
      const db = createDatabase()
      try {
        assert.throws(
          () =>
            createRuntime(db, {
              runner: {
                start: async () => ({ status: 'finished' }),
                resume: async () => ({ status: 'finished' }),
              },
              webhooks: options,
            }),
          InvalidWebhookConfigError
        )
      } finally {
        await db.manager.closeAll()
      }
    })
  }
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
