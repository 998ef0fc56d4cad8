import { request as httpRequest } from 'node:http'
import { test } from '@japa/runner'
import { setupSink } from './helpers/sink.js'
import { serveDurableDoor, webhookReceiver } from './helpers/durable_door.js'

/**
 * A webhook's callback URL is its subscription's: the reserved URLs its creating request named,
 * whichever replica delivers the wake (one that never served a subscription `PUT` included), and
 * never what another caller's request (another `Host`) named later.
 */

// No sweep: a wake is delivered by the replica that issues it.
const SUBSCRIPTIONS = { secret: 'callback-spec-secret', localWebhooks: true, sweepMs: 0 }

/** A JSON request with a `Host` of the caller's choosing (fetch would not send it). */
function put(port: number, path: string, body: unknown, headers: Record<string, string>) {
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      }
    )
    req.once('error', reject)
    req.end(JSON.stringify(body))
  })
}

const json = (method: string, body: unknown, user: string) => ({
  method,
  headers: { 'content-type': 'application/json', 'x-user': user },
  body: JSON.stringify(body),
})

test.group('Durable Streams subscriptions: callback URL', () => {
  test('a replica that never served the subscription PUT delivers its wake, with the callback URL of its creation', async ({
    assert,
    cleanup,
  }) => {
    const a = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(a.close)
    const b = await serveDurableDoor({
      subscriptions: SUBSCRIPTIONS,
      stack: await setupSink({}, false),
    })
    cleanup(b.close)
    const hook = await webhookReceiver()
    cleanup(hook.close)
    const created = await fetch(
      `${a.root}/__ds/subscriptions/elsewhere`,
      json('PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } }, 'alice')
    )
    assert.equal(created.status, 201)
    // The replica that took the PUT goes away (a deploy); the other takes the appends.
    await a.close()
    assert.equal((await fetch(`${b.root}/jobs/x`, json('PUT', [1], 'alice'))).status, 201)
    const delivery = await hook.first()
    assert.equal(delivery.callback_url, `${a.root}/__ds/subscriptions/elsewhere/callback`)
  })

  test("another caller's Host never becomes the callback URL of a subscription", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDurableDoor({ subscriptions: SUBSCRIPTIONS })
    cleanup(door.close)
    const hook = await webhookReceiver()
    cleanup(hook.close)
    const created = await fetch(
      `${door.root}/__ds/subscriptions/alice-hook`,
      json('PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } }, 'alice')
    )
    assert.equal(created.status, 201)
    // Mallory's own subscription, asked with a Host of hers.
    const status = await put(
      door.port,
      '/ds/v1/stream/__ds/subscriptions/mallory-hook',
      { type: 'webhook', pattern: 'other/*', webhook: { url: hook.url } },
      { 'host': 'evil.example', 'x-user': 'mallory' }
    )
    assert.equal(status, 201)
    assert.equal((await fetch(`${door.root}/jobs/a`, json('PUT', [1], 'alice'))).status, 201)
    const delivery = await hook.first()
    assert.equal(delivery.subscription_id, 'alice-hook')
    assert.equal(delivery.callback_url, `${door.root}/__ds/subscriptions/alice-hook/callback`)
  })
})
