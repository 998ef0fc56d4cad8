import { test } from '@japa/runner'
import { tableNames } from '../src/store/schema.js'
import { serveDurableDoor, webhookReceiver } from './helpers/durable_door.js'

/**
 * Subscriptions see only their owner's streams: a pattern's backfill, a pattern matched by a
 * later append, an explicit link's offsets and a pull-wake's wake stream never reach (or write
 * to) another principal's stream.
 */

const SUBSCRIPTIONS = { secret: 'ownership-spec-secret', localWebhooks: true, sweepMs: 100 }

const as = (user: string, method: string, body?: unknown) => ({
  method,
  headers: { 'content-type': 'application/json', 'x-user': user },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
})

test.group('Durable Streams subscriptions: ownership', () => {
  test("a pattern's backfill links none of another principal's streams", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    assert.equal((await fetch(`${door.root}/jobs/bob`, as('bob', 'PUT', [1, 2, 3]))).status, 201)
    assert.equal((await fetch(`${door.root}/jobs/alice`, as('alice', 'PUT', [1]))).status, 201)
    const hook = await webhookReceiver()
    cleanup(hook.close)
    const created = await fetch(
      `${door.root}/__ds/subscriptions/alice-sub`,
      as('alice', 'PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } })
    )
    assert.equal(created.status, 201)
    const body = (await created.json()) as { streams: { path: string }[] }
    assert.deepEqual(
      body.streams.map((stream) => stream.path),
      ['jobs/alice']
    )
  })

  test("an append to another principal's stream matching a pattern neither links nor wakes it", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    const hook = await webhookReceiver()
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/alice-later`
    await fetch(
      sub,
      as('alice', 'PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } })
    )
    assert.equal((await fetch(`${door.root}/jobs/bob`, as('bob', 'PUT', [1, 2]))).status, 201)
    assert.equal((await fetch(`${door.root}/jobs/alice`, as('alice', 'PUT', [1]))).status, 201)
    const delivery = await hook.first()
    assert.deepEqual(
      delivery.streams.map((stream: { path: string }) => stream.path),
      ['jobs/alice']
    )
    const state = (await (await fetch(sub, as('alice', 'GET'))).json()) as any
    assert.deepEqual(
      state.streams.map((stream: { path: string }) => stream.path),
      ['jobs/alice']
    )
  })

  test("an explicit link to another principal's stream shows none of its offsets", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    assert.equal((await fetch(`${door.root}/secret/bob`, as('bob', 'PUT', [1, 2, 3]))).status, 201)
    const hook = await webhookReceiver()
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/alice-explicit`
    const created = await fetch(
      sub,
      as('alice', 'PUT', {
        type: 'webhook',
        streams: ['secret/bob', 'secret/none'],
        webhook: { url: hook.url },
      })
    )
    assert.equal(created.status, 201)
    const body = (await created.json()) as { streams: { path: string; acked_offset: string }[] }
    const offsets = Object.fromEntries(body.streams.map((s) => [s.path, s.acked_offset]))
    // Bob's stream looks like a stream that does not exist (yet).
    assert.equal(offsets['secret/bob'], offsets['secret/none'])
    const added = await fetch(`${sub}/streams`, as('alice', 'POST', { streams: ['secret/bob2'] }))
    assert.equal(added.status, 204)
  })

  test("a pull-wake's wake stream never gets written when it is another principal's", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    assert.equal(
      (await fetch(`${door.root}/bob/inbox`, as('bob', 'PUT', [{ mine: 1 }]))).status,
      201
    )
    const created = await fetch(
      `${door.root}/__ds/subscriptions/alice-pull`,
      as('alice', 'PUT', { type: 'pull-wake', streams: ['alice/work'], wake_stream: 'bob/inbox' })
    )
    assert.equal(created.status, 201)
    assert.equal((await fetch(`${door.root}/alice/work`, as('alice', 'PUT', [1]))).status, 201)
    // Wait for the wake to be issued (a new generation on the subscription's row).
    const deadline = Date.now() + 15_000
    for (;;) {
      const row = await door.db
        .connection()
        .from(tableNames().dsSubscriptions)
        .where('id', 'alice-pull')
        .first()
      if (Number(row?.generation) >= 1) break
      if (Date.now() > deadline) throw new Error('no wake issued')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    // The wake's own write (if any) is in the same call as the row's transition: let it finish.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const read = await fetch(`${door.root}/bob/inbox?offset=-1`, as('bob', 'GET'))
    assert.equal(read.status, 200)
    assert.deepEqual(await read.json(), [{ mine: 1 }])
  })
})
