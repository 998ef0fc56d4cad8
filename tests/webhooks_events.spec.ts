import { test } from '@japa/runner'
import { DecisionConflictError, InvalidWebhookConfigError } from '../src/errors.js'
import { resolveWebhooks, type WebhooksOptions } from '../src/telemetry/webhooks/index.js'
import { createRuntime } from '../src/runtime.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { defineConfig } from '../src/define_config.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { setupParking, setupRunner } from './helpers/parking.js'
import { createDatabase } from './helpers/db.js'
import { runId, sleep } from './helpers/sink.js'
import { newSecret, outbox, until } from './helpers/webhooks.js'

/**
 * Issue 25, webhooks from an outbox: every lifecycle event is written by the change it reports,
 * in its transaction, and by no change that rolled back; the config's refusals at boot.
 */

const alice = { id: 'alice' }

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

test.group('Webhooks | config refused at boot', () => {
  test('refused: a rotation list empty, or with a bad secret (named by its index)', ({
    assert,
  }) => {
    const url = 'https://example.com/x'
    assert.throws(
      () => resolveWebhooks({ endpoints: [{ url, secret: [] }] }),
      /"endpoints.0.secret" must name at least one secret/
    )
    const bad = 'whsec_c2hvcnQ='
    let thrown: any
    try {
      resolveWebhooks({ endpoints: [{ url, secret: [newSecret(), bad] }] })
    } catch (error) {
      thrown = error
    }
    assert.equal(thrown.code, 'invalid_webhook_config')
    assert.include(thrown.message, '"endpoints.0.secret.1"')
    assert.notInclude(thrown.message, bad)
  })

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
