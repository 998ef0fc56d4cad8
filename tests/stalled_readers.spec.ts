import { test } from '@japa/runner'
import { fork, type ChildProcess } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'

const SCRIPT = fileURLToPath(new URL('./fixtures/stalled_server.ts', import.meta.url))
const COMPONENTS = 200
const COMPONENT_BYTES = 60_000

/** The stalled-readers server (tests/fixtures/stalled_server.ts), with `global.gc`. */
async function startServer() {
  const child: ChildProcess = fork(SCRIPT, [], {
    execArgv: ['--expose-gc', '--import=@poppinss/ts-exec'],
    env: {
      ...process.env,
      STALLED_COMPONENTS: String(COMPONENTS),
      STALLED_BYTES: String(COMPONENT_BYTES),
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
  return { call, kill: () => child.kill('SIGKILL') }
}

/** A raw HTTP/1.1 GET that never reads what comes back (the socket stays paused). */
async function stalledGet(url: string, path: string) {
  const { hostname, port } = new URL(url)
  const socket: Socket = connect(Number(port), hostname)
  socket.pause()
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nx-user: alice\r\naccept: text/event-stream\r\n\r\n`
  )
  return socket
}

/**
 * Wait until `value()` grows by less than `slack` in `quietMs` (the kernel trickles a little into
 * full windows: a few bytes a second, not the frames).
 */
async function settled(
  value: () => Promise<number>,
  { quietMs = 1500, slack = 256 * 1024, timeoutMs = 60_000 } = {}
) {
  const deadline = Date.now() + timeoutMs
  let last = await value()
  let since = Date.now()
  while (Date.now() < deadline) {
    await sleep(250)
    const now = await value()
    if (now - last > slack) {
      last = now
      since = Date.now()
    } else if (Date.now() - since >= quietMs) {
      return now
    }
  }
  throw new Error('the server never stopped writing')
}

test.group('Stalled readers: memory is bounded in bytes', () => {
  test('100 readers that never read hold at most the budget each, on every route', async ({
    assert,
    cleanup,
  }) => {
    const server = await startServer()
    cleanup(() => void server.kill())
    const { url, fetchUrl, runId, threadId } = await server.call('setup')
    const routes = [
      [url, `/runs/${runId}/stream`],
      [url, `/agui/runs/${runId}`],
      [url, `/agui/threads/${threadId}`],
      [fetchUrl, `/agui/runs/${runId}`],
    ].filter((_, i) => !process.env.ONLY || String(i) === process.env.ONLY)
    // Warm up every route once with a reader that reads it all (code loaded, pools open).
    for (const [base, path] of routes) {
      const response = await fetch(`${base}${path}`, { headers: { 'x-user': 'alice' } })
      assert.equal(response.status, 200)
      await response.text()
    }
    const before = await server.call('heap')
    const sockets: Socket[] = []
    cleanup(() => sockets.forEach((socket) => socket.destroy()))
    for (let i = 0; i < 100; i++) {
      const [base, path] = routes[i % routes.length]
      sockets.push(await stalledGet(base, path))
    }
    const t0 = Date.now()
    const written = await settled(async () => (await server.call('progress')).written)
    const after = await server.call('heap')
    const progress = await server.call('progress')
    const grown = after.heapUsed + after.external - before.heapUsed - before.external
    console.log({
      written,
      ms: Date.now() - t0,
      progress,
      heapGrown: after.heapUsed - before.heapUsed,
      externalGrown: after.external - before.external,
      perReader: grown / 100,
    })
  }).timeout(180_000)
})
