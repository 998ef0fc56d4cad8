import { createServer } from 'node:http'
import { randomBytes } from 'node:crypto'
import { getActiveTest } from '@japa/runner'
import { Webhook } from 'standardwebhooks'
import type { Database } from '@adonisjs/lucid/database'
import type { WebhooksOptions } from '../../src/telemetry/webhooks/index.js'
import { listen } from './durable_door.js'
import { sleep } from './sink.js'
import { setupParking } from './parking.js'

/** A fresh Standard Webhooks secret (`whsec_` and the base64 of 32 random bytes). */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

/** One POST as received: its headers, raw body, and the body as the reference check read it. */
export interface Received {
  id: string
  headers: Record<string, string>
  raw: string
  /** What `new Webhook(secret).verify(raw, headers)` returned (it throws on a bad signature). */
  event: any
}

/**
 * A webhook receiver on loopback that checks every POST with the reference library's
 * `Webhook.verify` and answers each with `status(index)` (default 200); closed when the test
 * ends. `received` holds every attempt in order, `verified` only those the check accepted.
 */
export async function signedReceiver(
  secret: string,
  status: (index: number) => number = () => 200
) {
  const received: Received[] = []
  const refused: string[] = []
  const hook = new Webhook(secret)
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers[name] = value
      }
      try {
        const event = hook.verify(raw, headers)
        received.push({ id: headers['webhook-id'], headers, raw, event })
      } catch (error) {
        refused.push((error as Error).message)
      }
      res.writeHead(status(received.length - 1))
      res.end('{"secret":"receiver body, never stored"}')
    })
  })
  const url = `http://127.0.0.1:${await listen(server)}/hook`
  const close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  getActiveTest()?.cleanup(close)
  return {
    url,
    received,
    refused,
    close,
    /** The events of `type` received (each attempt), once `n` came (else throws after `ms`). */
    async wait(match: (r: Received) => boolean, n = 1, ms = 15_000) {
      const deadline = Date.now() + ms
      while (received.filter(match).length < n) {
        if (Date.now() > deadline) {
          throw new Error(`${received.filter(match).length} of ${n} deliveries`)
        }
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return received.filter(match)
    },
  }
}

/** The event types received, in order, of the stream `streamRunId`. */
export const typesOf = (received: Received[], streamRunId: string) =>
  received.filter((r) => r.event.data.streamRunId === streamRunId).map((r) => r.event.type)

/** The outbox rows of a stream, oldest first. */
export async function outbox(db: Database, streamRunId: string) {
  return db
    .connection()
    .from('agent_webhook_deliveries')
    .where('stream_run_id', streamRunId)
    .orderBy('created_at', 'asc')
}

/** Wait until `check` is true, at most `ms`. */
export async function until(check: () => Promise<boolean> | boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}

/** Fast retries and polls, for tests. */
export const FAST: Partial<WebhooksOptions> = {
  backoffMs: 20,
  maxBackoffMs: 60,
  pollIntervalMs: 20,
}

/**
 * A parking stack (a scripted agent of no steps) whose webhooks go to a new signed receiver on
 * loopback, with {@link FAST} retries and `webhooks`' other options.
 */
export async function hookedStack(webhooks: Partial<WebhooksOptions> = {}) {
  const secret = newSecret()
  const receiver = await signedReceiver(secret)
  const stack = await setupParking(
    { steps: [] },
    { webhooks: { ...FAST, ...webhooks, endpoints: [{ url: receiver.url, secret }] } }
  )
  return { secret, receiver, stack }
}
