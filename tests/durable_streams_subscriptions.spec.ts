import { createPublicKey, verify } from 'node:crypto'
import { test } from '@japa/runner'
import type { DurableSubscriptionsOptions } from '../src/durable_streams/write/door.js'
import { setupSink } from './helpers/sink.js'
import { snapshotTables } from './helpers/db.js'
import { serveDurableDoor, webhookReceiver, type Delivery } from './helpers/durable_door.js'

/**
 * Durable Streams subscriptions (PROTOCOL.md 6-7) past what the conformance suite checks: a
 * webhook that fails is retried with backoff until it answers, then never again; a lease that
 * lapses is woken again by the sweep and the old wake is fenced; a wake issued once when two
 * replicas see the appends; every refusal changes no row; off by default.
 */

const SUBSCRIPTIONS: DurableSubscriptionsOptions = {
  secret: 'subscriptions-spec-secret',
  localWebhooks: true,
  sweepMs: 100,
}

/** Whether `delivery`'s signature verifies with the server's JWK Set (PROTOCOL.md 7.1). */
function signedBy(delivery: Delivery, jwks: { keys: Array<Record<string, string>> }) {
  const match = /^t=(\d+),kid=([^,]+),ed25519=([A-Za-z0-9_-]+)$/.exec(delivery.signature ?? '')
  if (!match) return false
  const key = jwks.keys.find((candidate) => candidate.kid === match[2])
  if (!key) return false
  const publicKey = createPublicKey({ key, format: 'jwk' })
  const signed = Buffer.from(`${match[1]}.${delivery.raw}`)
  return verify(null, signed, publicKey, Buffer.from(match[3], 'base64url'))
}

const json = (method: string, body: unknown, headers: Record<string, string> = {}) => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

test.group('Durable Streams subscriptions', () => {
  test('a webhook that fails three times is woken again after each, with backoff, then never again once it answers done; every delivery signed', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    const hook = await webhookReceiver((i) =>
      i < 3 ? { status: 500 } : { status: 200, body: { done: true } }
    )
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/retry`
    const created = await fetch(
      sub,
      json('PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } })
    )
    assert.equal(created.status, 201)
    const jwks = (await (await fetch(`${door.root}/__ds/jwks.json`)).json()) as {
      keys: Array<Record<string, string>>
    }
    assert.equal((await fetch(`${door.root}/jobs/a`, json('PUT', { job: 1 }))).status, 201)

    const deliveries = await hook.count(4, 20_000)
    // Each failure was a wake of its own (a new generation), each delivery signed.
    assert.deepEqual(
      deliveries.map((delivery) => delivery.body.generation),
      [1, 2, 3, 4]
    )
    for (const delivery of deliveries) assert.isTrue(signedBy(delivery, jwks))
    // Backoff: about 1 s, 2 s, 4 s between the attempts (20 % jitter), never at once.
    const tail = deliveries[3].body.streams[0].tail_offset
    await new Promise((resolve) => setTimeout(resolve, 1500))
    assert.lengthOf(hook.deliveries, 4)
    const state = (await (await fetch(sub)).json()) as any
    assert.equal(state.status, 'active')
    assert.deepEqual(state.streams, [{ path: 'jobs/a', link_type: 'glob', acked_offset: tail }])
  }).timeout(40_000)

  test('while a webhook retry waits the subscription says failed', async ({ assert, cleanup }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    const hook = await webhookReceiver(() => ({ status: 503 }))
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/failing`
    await fetch(
      sub,
      json('PUT', { type: 'webhook', streams: ['jobs/f'], webhook: { url: hook.url } })
    )
    await fetch(`${door.root}/jobs/f`, json('PUT', { job: 1 }))
    await hook.count(1)
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(((await (await fetch(sub)).json()) as any).status, 'failed')
  })

  test("a lapsed lease is woken again by the sweep; the old wake's callback is fenced and acks nothing", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    // The first wake is taken and never called back; the second answers done.
    const hook = await webhookReceiver((i) =>
      i === 0 ? { status: 200 } : { status: 200, body: { done: true } }
    )
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/lapse`
    await fetch(
      sub,
      json('PUT', {
        type: 'webhook',
        pattern: 'jobs/*',
        webhook: { url: hook.url },
        lease_ttl_ms: 1000,
      })
    )
    await fetch(`${door.root}/jobs/l`, json('PUT', { job: 1 }))
    const [first, second] = await hook.count(2)
    assert.equal(second.body.generation, first.body.generation + 1)
    assert.notEqual(second.body.wake_id, first.body.wake_id)
    await new Promise((resolve) => setTimeout(resolve, 200))
    const acked = ((await (await fetch(sub)).json()) as any).streams
    const stale = await fetch(
      first.body.callback_url,
      json(
        'POST',
        {
          wake_id: first.body.wake_id,
          generation: first.body.generation,
          acks: [{ stream: 'jobs/l', offset: '0000000000000099_' }],
          done: true,
        },
        { authorization: `Bearer ${first.body.callback_token}` }
      )
    )
    assert.equal(stale.status, 409)
    assert.equal(((await stale.json()) as any).error.code, 'FENCED')
    assert.deepEqual(((await (await fetch(sub)).json()) as any).streams, acked)
  }).timeout(20_000)

  test('two replicas on one database: an append on either wakes the subscription once', async ({
    assert,
    cleanup,
  }) => {
    const a = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(a.close)
    // Another replica: its own connections and sink on the same tables.
    const b = await serveDurableDoor({
      subscriptions: SUBSCRIPTIONS,
      stack: await setupSink({}, false),
    })
    cleanup(b.close)
    const hook = await webhookReceiver(() => ({ status: 200 }))
    cleanup(hook.close)
    await fetch(
      `${a.root}/__ds/subscriptions/replicas`,
      json('PUT', {
        type: 'webhook',
        pattern: 'jobs/*',
        webhook: { url: hook.url },
        lease_ttl_ms: 5000,
      })
    )
    await fetch(`${b.root}/jobs/r`, json('PUT', { job: 1 }))
    await Promise.all([
      fetch(`${a.root}/jobs/r`, json('POST', { job: 2 })),
      fetch(`${b.root}/jobs/r`, json('POST', { job: 3 })),
    ])
    await hook.count(1)
    await new Promise((resolve) => setTimeout(resolve, 500))
    // One wake in flight (its lease holds): the later appends wait for its ack.
    assert.lengthOf(hook.deliveries, 1)
  })

  test('refusals change nothing: an unsafe webhook, an invalid body, another configuration, a forged token, another principal', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    const sub = `${door.root}/__ds/subscriptions/mine`
    const before = await snapshotTables(door.db)
    for (const url of [
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest',
      'https://192.168.1.2/x',
      'ftp://example.com/x',
      'http://example.com/x',
    ]) {
      const refused = await fetch(
        sub,
        json('PUT', { type: 'webhook', pattern: 'a/*', webhook: { url } })
      )
      assert.equal(refused.status, 400, url)
      assert.equal(((await refused.json()) as any).error.code, 'WEBHOOK_URL_REJECTED')
    }
    for (const body of [
      {},
      { type: 'webhook' },
      { type: 'pull-wake', pattern: 'a/*' },
      {
        type: 'webhook',
        pattern: 'a/*',
        webhook: { url: 'https://example.com' },
        lease_ttl_ms: 10,
      },
    ]) {
      assert.equal((await fetch(sub, json('PUT', body))).status, 400, JSON.stringify(body))
    }
    assert.deepEqual(await snapshotTables(door.db), before)

    await fetch(`${door.root}/wake/w`, json('PUT', [], { 'x-user': 'alice' }))
    const config = { type: 'pull-wake', pattern: 'a/*', wake_stream: 'wake/w' }
    assert.equal((await fetch(sub, json('PUT', config, { 'x-user': 'alice' }))).status, 201)
    const created = await snapshotTables(door.db)
    const other = await fetch(
      sub,
      json('PUT', { ...config, pattern: 'b/*' }, { 'x-user': 'alice' })
    )
    assert.equal(other.status, 409)
    // Another principal's subscription answers as a missing one, whatever the method.
    assert.equal((await fetch(sub, { headers: { 'x-user': 'bob' } })).status, 404)
    assert.equal((await fetch(sub, { method: 'DELETE', headers: { 'x-user': 'bob' } })).status, 404)
    const claim = await fetch(`${sub}/claim`, json('POST', { worker: 'w' }, { 'x-user': 'bob' }))
    assert.equal(claim.status, 404)
    const forged = await fetch(
      `${sub}/ack`,
      json(
        'POST',
        { wake_id: 'w_x', generation: 1, acks: [], done: true },
        { authorization: 'Bearer abc.def' }
      )
    )
    assert.equal(forged.status, 401)
    assert.deepEqual(await snapshotTables(door.db), created)
  })

  test("another principal's streams are none of a subscription's business: no link, no wake", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    const alice = { 'x-user': 'alice' }
    const bob = { 'x-user': 'bob' }
    assert.equal(
      (await fetch(`${door.root}/shared/a`, json('PUT', { secret: 1 }, alice))).status,
      201
    )
    assert.equal((await fetch(`${door.root}/wake/alice`, json('PUT', [], alice))).status, 201)
    const hook = await webhookReceiver(() => ({ status: 200, body: { done: true } }))
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/bobs`
    const created = await fetch(
      sub,
      json('PUT', { type: 'webhook', pattern: '**', webhook: { url: hook.url } }, bob)
    )
    assert.equal(created.status, 201)
    assert.deepEqual(((await created.json()) as any).streams, [])
    await fetch(`${door.root}/shared/a`, json('POST', { secret: 2 }, alice))
    await fetch(`${door.root}/shared/b`, json('PUT', { secret: 3 }, alice))
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.lengthOf(hook.deliveries, 0)
    assert.deepEqual(((await (await fetch(sub, { headers: bob })).json()) as any).streams, [])
    // Bob's own stream wakes Bob.
    await fetch(`${door.root}/shared/bob`, json('PUT', { mine: 1 }, bob))
    const [delivery] = await hook.count(1)
    assert.deepEqual(
      delivery.body.streams.map((stream: { path: string }) => stream.path),
      ['shared/bob']
    )
  })

  test('off by default: the reserved __ds paths answer 404 and are never taken for streams', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor()
    cleanup(door.close)
    const before = await snapshotTables(door.db)
    const put = await fetch(`${door.root}/__ds/subscriptions/x`, json('PUT', { type: 'webhook' }))
    assert.equal(put.status, 404)
    assert.equal((await fetch(`${door.root}/__ds/jwks.json`)).status, 404)
    assert.deepEqual(await snapshotTables(door.db), before)
  })
})
