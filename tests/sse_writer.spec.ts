import { test } from '@japa/runner'
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { serveChunks } from '../src/http/sse.js'
import type { Chunk } from '../src/http/agui_encoding.js'

const CHUNK = 64 * 1024
/** Far more than loopback's socket buffers hold (a few MB), so a paused client stalls the writer. */
const CHUNKS = 1024

/**
 * One `serveChunks` response over a real server on 127.0.0.1, read by a raw socket the test
 * controls (paused until it calls `resume`).
 */
async function serve(chunks: () => AsyncIterable<Chunk>, heartbeatMs: number) {
  let response!: ServerResponse
  let served!: Promise<void>
  const server = createServer((req, res) => {
    response = res
    served = serveChunks(req, res, chunks(), { heartbeatMs })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const client: Socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
  client.pause()
  await once(client, 'connect')
  client.write('GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  const close = async () => {
    client.destroy()
    server.closeAllConnections()
    server.close()
    await served
  }
  return { client, close, response: () => response }
}

/** Wait until `value()` stops changing for `quietMs` (at most `timeoutMs`); returns it. */
async function settled(value: () => number, quietMs = 300, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  let last = value()
  let since = Date.now()
  while (Date.now() < deadline) {
    await sleep(25)
    const now = value()
    if (now !== last) {
      last = now
      since = Date.now()
    } else if (Date.now() - since >= quietMs) {
      return now
    }
  }
  throw new Error('the producer never stalled')
}

test.group('serveChunks (SSE writer)', () => {
  test('a client that does not read stalls the producer (it waits for drain), then it resumes', async ({
    assert,
  }) => {
    const payload = new Uint8Array(CHUNK).fill(0x61)
    let pulled = 0
    async function* chunks() {
      for (let i = 0; i < CHUNKS; i++) {
        pulled++
        yield payload
      }
    }
    const { client, close, response } = await serve(chunks, 60_000)
    try {
      // Paused: the generator is pulled only as far as the socket buffers take, then waits.
      const stalled = await settled(() => pulled)
      assert.isAbove(stalled, 0)
      assert.isBelow(stalled, CHUNKS)
      // What waits in the process (not yet taken by the kernel) is at most the chunk whose
      // write said "full": never a growing queue.
      assert.isAtMost(response().writableLength, CHUNK + response().writableHighWaterMark)
      await sleep(300)
      assert.equal(pulled, stalled, 'not pulled while the client does not read')

      // The client reads: the producer goes on to the end and every byte arrives.
      let received = 0
      let tail = ''
      client.on('data', (data: Buffer) => {
        received += data.length
        tail = (tail + data.toString('latin1')).slice(-16)
      })
      client.resume()
      const deadline = Date.now() + 20_000
      while (!tail.endsWith('0\r\n\r\n') && Date.now() < deadline) await sleep(20)
      assert.equal(pulled, CHUNKS)
      assert.isAtLeast(received, CHUNKS * CHUNK)
      assert.isTrue(tail.endsWith('0\r\n\r\n'), 'the response ended')
    } finally {
      await close()
    }
  }).timeout(60_000)

  test('a client that does not read gets nothing queued: no heartbeat, and corked batches of small chunks stop at the mark', async ({
    assert,
  }) => {
    // Small chunks, many per turn of the event loop: the cork batching must not hold them all.
    const payload = 'data: ' + 'b'.repeat(200) + '\n\n'
    let pulled = 0
    async function* chunks() {
      for (let i = 0; i < 200_000; i++) {
        pulled++
        yield payload
      }
    }
    const { close, response } = await serve(chunks, 20)
    try {
      await settled(() => pulled)
      const held = response().writableLength
      // At most the mark plus the chunk that passed it (with its chunked-encoding frame).
      assert.isAtMost(held, response().writableHighWaterMark + payload.length + 16)
      // Stalled well past the heartbeat: no ping piles up behind the frames.
      await sleep(600)
      assert.equal(response().writableLength, held)
    } finally {
      await close()
    }
  }).timeout(60_000)

  test('an idle stream gets a heartbeat comment', async ({ assert }) => {
    let release!: () => void
    const idle = new Promise<void>((resolve) => (release = resolve))
    async function* chunks() {
      yield 'data: {"n":1}\n\n'
      await idle
      yield 'data: {"n":2}\n\n'
    }
    const { client, close } = await serve(chunks, 40)
    try {
      let text = ''
      client.setEncoding('utf8')
      client.on('data', (data: string) => (text += data))
      client.resume()
      const deadline = Date.now() + 5_000
      while (!text.includes(': ping\n\n') && Date.now() < deadline) await sleep(10)
      assert.include(text, 'data: {"n":1}\n\n')
      assert.include(text, ': ping\n\n')
      assert.isBelow(text.indexOf('data: {"n":1}'), text.indexOf(': ping'))
      assert.include(text, 'Content-Type: text/event-stream')
      release()
      while (!text.includes('data: {"n":2}') && Date.now() < deadline) await sleep(10)
      assert.include(text, 'data: {"n":2}\n\n')
    } finally {
      release()
      await close()
    }
  })
})
