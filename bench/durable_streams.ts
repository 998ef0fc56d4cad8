/**
 * Durable Streams, measured over HTTP with the same code for any server that speaks the protocol
 * (PROTOCOL.md): the reference server `@durable-streams/server` and this package's door. Reads go
 * through the official client `@durable-streams/client` (catch-up and SSE) or plain `fetch`
 * (long-poll: one request, one answer timed); writes are plain `fetch` POSTs of JSON messages.
 *
 * - catch-up: a JSON stream of N messages read from offset -1 to its end (the client follows
 *   `Stream-Next-Offset` until `Stream-Up-To-Date`), messages/s;
 * - SSE: a reader on `live=sse` at the tail, a writer appending one message at a time: POST sent
 *   -> the message in the reader's hands, ms;
 * - long-poll: a reader waiting at the tail on `live=long-poll`: POST sent -> its 200 answer, ms.
 *
 * Every reading is checked (the count and order of the messages read): a server that answers
 * without the messages fails the bench instead of scoring.
 */
import { loadavg } from 'node:os'
import { stream } from '@durable-streams/client'
import { percentile } from './script.js'

/** A server under test: where its streams live (`streamUrl(name)`: a stream's URL). */
export interface DsTarget {
  label: string
  streamUrl: (name: string) => string
  /** Headers every request carries (auth, for a door that wants a principal). */
  headers?: Record<string, string>
}

export interface DsSizes {
  /** Messages in the catch-up stream. */
  catchUpMessages: number
  /** Catch-up reads (the median is reported; the first is a warm-up, not counted). */
  catchUpReads: number
  /** Appends timed to the SSE reader. */
  sseAppends: number
  /** Long-poll wake-ups timed. */
  longPolls: number
}

export interface DsResult {
  /** Messages/s of catch-up reads (median), and of the first one (cold). */
  /** Messages/s of catch-up reads (median), of the first one, and a read's requests. */
  catchUp: { median: number; first: number; messages: number; requests: number }
  sse: number[]
  /** The SSE appends' own round trips (POST sent -> its 204): the write's share of `sse`. */
  appends: number[]
  longPoll: number[]
  /** The long-poll appends' own round trips. */
  longPollAppends: number[]
  /** The machine's 1-minute load average after each measurement. */
  load: { catchUp: number; sse: number; longPoll: number }
}

const now = () => performance.now()
const JSON_TYPE = { 'content-type': 'application/json' }
let counter = 0
const streamName = (what: string) => `bench-ds-${what}-${process.pid}-${++counter}`

async function ok(response: Response, what: string) {
  if (response.status >= 300) {
    throw new Error(`${what}: HTTP ${response.status} ${await response.text()}`)
  }
  await response.body?.cancel()
  return response
}

/** PUT an empty JSON stream; its tail offset. */
async function create(target: DsTarget, name: string) {
  const url = target.streamUrl(name)
  const response = await ok(
    await fetch(url, { method: 'PUT', headers: { ...target.headers, ...JSON_TYPE } }),
    `PUT ${name}`
  )
  return { url, tail: response.headers.get('stream-next-offset')! }
}

/** POST one JSON value (an array is a batch: the protocol flattens it one level). */
async function append(target: DsTarget, url: string, body: unknown) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...target.headers, ...JSON_TYPE },
    body: JSON.stringify(body),
  })
  await ok(response, 'POST')
  return response.headers.get('stream-next-offset')!
}

/** A message the size of a text frame. */
const message = (i: number) => ({ t: 'text', v: `token ${i} of the answer `, i })

/**
 * Catch-up reads of the stream at `url` from offset -1 to its end (`reads` of them after a
 * first, reported apart), messages/s; `check` refuses a read that missed messages.
 */
export async function timedCatchUps(
  url: string,
  headers: Record<string, string> | undefined,
  reads: number,
  check: (items: unknown[]) => string | null
) {
  const rates: number[] = []
  let messages = 0
  let requests = 0
  const counted: typeof fetch = (...args) => {
    requests++
    return fetch(...args)
  }
  for (let round = 0; round < reads + 1; round++) {
    requests = 0
    const started = now()
    // `live: 'long-poll'` with `json()`: plain catch-up requests from chunk to chunk, ending
    // at the first up-to-date one. (`live: false` in client 0.2.7 stops after the first
    // answer, up to date or not: a server that splits a catch-up into chunks, as the protocol
    // allows, would be read in part.)
    const response = await stream({ url, headers, offset: '-1', live: 'long-poll', fetch: counted })
    const items = await response.json()
    const seconds = (now() - started) / 1000
    const wrong = check(items)
    if (wrong) throw new Error(wrong)
    messages = items.length
    rates.push(items.length / seconds)
  }
  return { median: percentile(rates.slice(1), 50), first: rates[0], messages, requests }
}

async function catchUp(target: DsTarget, sizes: DsSizes) {
  const { url } = await create(target, streamName('catchup'))
  for (let i = 0; i < sizes.catchUpMessages; i += 500) {
    const batch = []
    for (let j = i; j < Math.min(i + 500, sizes.catchUpMessages); j++) batch.push(message(j))
    await append(target, url, batch)
  }
  return timedCatchUps(url, target.headers, sizes.catchUpReads, (items) =>
    items.length !== sizes.catchUpMessages || items.some((item: any, i) => item.i !== i)
      ? `${target.label}: catch-up read ${items.length} messages of ${sizes.catchUpMessages}`
      : null
  )
}

async function sse(target: DsTarget, sizes: DsSizes) {
  const { url, tail } = await create(target, streamName('sse'))
  const arrivals = new Map<number, number>()
  let waiting: { i: number; resolve: () => void } | null = null
  const response = await stream<{ i: number }>({
    url,
    headers: target.headers,
    offset: tail,
    live: 'sse',
  })
  const failed: Error[] = []
  response.subscribeJson((batch) => {
    const at = now()
    for (const item of batch.items) {
      if (arrivals.has(item.i)) failed.push(new Error(`message ${item.i} delivered twice`))
      arrivals.set(item.i, at)
      if (waiting && item.i === waiting.i) waiting.resolve()
    }
  })
  const delivered = (i: number) =>
    new Promise<void>((resolve, reject) => {
      if (arrivals.has(i)) return resolve()
      const timer = setTimeout(
        () => reject(new Error(`${target.label}: SSE message ${i} not delivered in 10 s`)),
        10_000
      )
      waiting = {
        i,
        resolve: () => {
          clearTimeout(timer)
          waiting = null
          resolve()
        },
      }
    })
  // A first message, not timed: the reader is connected and live once it holds it.
  const warm = delivered(-1)
  await append(target, url, message(-1))
  await warm
  const latencies: number[] = []
  const appends: number[] = []
  for (let i = 0; i < sizes.sseAppends; i++) {
    const got = delivered(i)
    const sent = now()
    await append(target, url, message(i))
    appends.push(now() - sent)
    await got
    latencies.push(arrivals.get(i)! - sent)
  }
  response.cancel()
  if (failed.length > 0) throw failed[0]
  return { latencies, appends }
}

async function longPoll(target: DsTarget, sizes: DsSizes) {
  const { url } = await create(target, streamName('longpoll'))
  let tail = await append(target, url, message(-1))
  const latencies: number[] = []
  const appends: number[] = []
  for (let i = 0; i < sizes.longPolls; i++) {
    const waiting = fetch(`${url}?offset=${encodeURIComponent(tail)}&live=long-poll`, {
      headers: target.headers,
    })
    // Let the reader reach the server and wait there (loopback: well under this).
    await new Promise((resolve) => setTimeout(resolve, 30))
    const sent = now()
    const appended = append(target, url, message(i)).then((next) => {
      appends.push(now() - sent)
      return next
    })
    const answer = await waiting
    const took = now() - sent
    const body = await answer.json()
    tail = await appended
    if (answer.status !== 200 || !Array.isArray(body) || body[0]?.i !== i) {
      throw new Error(
        `${target.label}: long-poll answered ${answer.status} ${JSON.stringify(body)}`
      )
    }
    latencies.push(took)
  }
  return { latencies, appends }
}

/** The three measurements on one server, in turn. */
export async function benchDurableStreamsTarget(
  target: DsTarget,
  sizes: DsSizes
): Promise<DsResult> {
  const load = { catchUp: 0, sse: 0, longPoll: 0 }
  const caught = await catchUp(target, sizes)
  load.catchUp = loadavg()[0]
  const live = await sse(target, sizes)
  load.sse = loadavg()[0]
  const polls = await longPoll(target, sizes)
  load.longPoll = loadavg()[0]
  return {
    catchUp: caught,
    sse: live.latencies,
    appends: live.appends,
    longPoll: polls.latencies,
    longPollAppends: polls.appends,
    load,
  }
}
