import { test } from '@japa/runner'
import { fork } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { DEFAULTS } from '../src/defaults.js'

const SCRIPT = fileURLToPath(new URL('./fixtures/stalled_server.ts', import.meta.url))
const COMPONENT_BYTES = 60_000
const KiB = 1024

/**
 * What one stalled reader may hold besides its batch of `readerBytes` ("the socket buffers"),
 * for frames of `chunk` bytes on the wire. Between the reader's generator and the kernel sit
 * Node's writable buffers, each holding at most its high-water mark (64 KiB) plus the chunk that
 * passed it: the response's, and on the Fetch route also the adapter's `Readable.fromWeb`
 * (two marks); chunks: the one past each mark, the one the web stream queues ahead, the frame
 * being encoded (four). 64 KiB covers the connection's own objects (request, response, context,
 * generators, translator).
 */
const socketBuffers = (chunk: number) => 2 * 64 * KiB + 4 * chunk + 64 * KiB

/** The stalled-readers server (tests/fixtures/stalled_server.ts), with `global.gc`. */
async function startServer(components: number, config: object = {}) {
  const child = fork(SCRIPT, [], {
    execArgv: ['--expose-gc', '--import=@poppinss/ts-exec'],
    env: {
      ...process.env,
      STALLED_COMPONENTS: String(components),
      STALLED_BYTES: String(COMPONENT_BYTES),
      STALLED_CONFIG: JSON.stringify(config),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('exit', (code) => reject(new Error(`server exited early (${code})`)))
  })
  let next = 0
  const call = (op: string, extra: object = {}): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = ++next
      const listener = (message: any) => {
        if (message.id !== id) return
        child.off('message', listener)
        if (message.error) reject(new Error(message.error))
        else resolve(message)
      }
      child.on('message', listener)
      child.send({ op, id, ...extra })
    })
  /** Growth of the server's heap plus external memory (buffers) since `from`, after full GCs. */
  const grownSince = async (from: { heapUsed: number; external: number }) => {
    const now = await call('heap')
    return now.heapUsed + now.external - from.heapUsed - from.external
  }
  return { call, grownSince, kill: () => void child.kill('SIGKILL') }
}

/** The four streaming routes: native, AG-UI by run and by thread, the Fetch handler. */
const routes = (setup: { url: string; fetchUrl: string; runId: string; threadId: string }) => [
  `${setup.url}/runs/${setup.runId}/stream`,
  `${setup.url}/agui/runs/${setup.runId}`,
  `${setup.url}/agui/threads/${setup.threadId}`,
  `${setup.fetchUrl}/agui/runs/${setup.runId}`,
]

/** A raw HTTP/1.1 GET that never reads what comes back (the socket stays paused). */
async function stalledGet(address: string) {
  const { hostname, port, pathname } = new URL(address)
  const socket: Socket = connect(Number(port), hostname)
  socket.pause()
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(
    `GET ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\nx-user: alice\r\naccept: text/event-stream\r\n\r\n`
  )
  return socket
}

/**
 * Wait until the server's bytes written grow by less than `slack` in `quietMs`: every socket's
 * kernel buffers are full (the kernel still trickles a little into full windows).
 */
async function untilStalled(server: Awaited<ReturnType<typeof startServer>>) {
  const written = async () => (await server.call('progress')).written as number
  const deadline = Date.now() + 90_000
  let last = await written()
  let since = Date.now()
  while (Date.now() < deadline) {
    await sleep(250)
    const now = await written()
    if (now - last > 256 * KiB) {
      last = now
      since = Date.now()
    } else if (Date.now() - since >= 1500) {
      return now
    }
  }
  throw new Error('the server never stopped writing')
}

/** Read a paused socket's response to its end; the bytes received, as latin1 text. */
async function readToEnd(socket: Socket) {
  let text = ''
  socket.on('data', (data: Buffer) => (text += data.toString('latin1')))
  socket.resume()
  const deadline = Date.now() + 60_000
  while (!text.endsWith('0\r\n\r\n') && Date.now() < deadline) await sleep(20)
  return text
}

test.group('Stalled readers: memory is bounded in bytes', () => {
  test('100 readers that never read, on every streaming route, hold at most readerBytes plus the socket buffers each', async ({
    assert,
    cleanup,
  }) => {
    // The run: 200 components of 60 KB (12 MB), far more than a socket's buffers take.
    const server = await startServer(200)
    cleanup(server.kill)
    const setup = await server.call('setup')
    const urls = routes(setup)
    // Every route read once by a reader that reads (code loaded, pools open).
    for (const url of urls) {
      const response = await fetch(url, { headers: { 'x-user': 'alice' } })
      assert.equal(response.status, 200)
      assert.include(await response.text(), '"pad":"')
    }
    const before = await server.call('heap')
    const sockets: Socket[] = []
    cleanup(() => sockets.forEach((socket) => socket.destroy()))
    for (let i = 0; i < 100; i++) sockets.push(await stalledGet(urls[i % urls.length]))
    const written = await untilStalled(server)
    const grown = await server.grownSince(before)

    // Stalled mid-run: every response open, each far from its 12 MB.
    assert.equal((await server.call('progress')).streams, 100)
    assert.isBelow(written / 100, (200 * COMPONENT_BYTES) / 2)
    const bound = 100 * (DEFAULTS.readerBytes + socketBuffers(COMPONENT_BYTES + 1024))
    assert.isBelow(grown, bound, `${grown} bytes held for 100 stalled readers`)
    // (Before the fix: about 8.5 MB per reader, 846 MB in all.)

    // A stalled reader that reads again gets the whole run, in order.
    const text = await readToEnd(sockets[0])
    const numbers = [...text.matchAll(/\{"i":(\d+),"pad":"/g)].map((m) => Number(m[1]))
    assert.deepEqual(
      numbers,
      Array.from({ length: 200 }, (_, i) => i)
    )

    // Readers that went away leave nothing behind: no stream followed, no frame held.
    sockets.forEach((socket) => socket.destroy())
    const deadline = Date.now() + 10_000
    let progress = await server.call('progress')
    while ((progress.streams > 0 || progress.followed > 0) && Date.now() < deadline) {
      await sleep(50)
      progress = await server.call('progress')
    }
    assert.equal(progress.followed, 0)
    assert.isBelow(await server.grownSince(before), 8 * 1024 * KiB)
  }).timeout(240_000)

  test('a live run: readers stalled on the shared window hold their budget, whatever the frame size', async ({
    assert,
    cleanup,
  }) => {
    const readerBytes = 256 * KiB
    const server = await startServer(120, { readerBytes })
    cleanup(server.kill)
    // Warm every route on a written run, then a live run that writes once readers wait for it.
    const urls = routes(await server.call('setup'))
    for (const url of urls) await (await fetch(url, { headers: { 'x-user': 'alice' } })).text()
    const live = routes(await server.call('setup', { live: true }))
    const before = await server.call('heap')
    const sockets: Socket[] = []
    cleanup(() => sockets.forEach((socket) => socket.destroy()))
    for (let i = 0; i < 40; i++) sockets.push(await stalledGet(live[i % live.length]))
    await sleep(200)
    await server.call('write')
    await untilStalled(server)
    const grown = await server.grownSince(before)
    assert.equal((await server.call('progress')).streams, 40)
    // The stream's one shared window (windowBytes) is held once, whatever the readers.
    const bound = 40 * (readerBytes + socketBuffers(COMPONENT_BYTES + 1024)) + DEFAULTS.windowBytes
    assert.isBelow(grown, bound, `${grown} bytes held for 40 stalled readers`)
  }).timeout(240_000)
})
