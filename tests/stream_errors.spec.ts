import { test } from '@japa/runner'
import { fork, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { readFile } from 'node:fs/promises'
import { createDatabase, resetTables } from './helpers/db.js'
import { blocksOf } from './helpers/doc_blocks.js'

/**
 * An error on a request or response stream ends that request, never the process: a body cut
 * short (the client declares more than it sends and goes away), a connection reset mid-body and
 * one reset mid-response (while the run streams as SSE), on every body route and every streamed
 * route of both transports (the AdonisJS app; the Fetch handlers behind the host adapter the docs
 * show). Raw `net` sockets against a server in a process of its own: the process must outlive
 * every cut and serve the next request.
 */

interface Servers {
  adonis: string
  fetch: string
  child: ChildProcess
  /** Why the server process ended, if it did. */
  exited: () => string | null
}

async function startServers(cleanup: (fn: () => void) => void): Promise<Servers> {
  const db = createDatabase()
  await resetTables(db)
  await db.manager.closeAll()
  const child = fork(fileURLToPath(new URL('fixtures/stream_errors_app.ts', import.meta.url)), [], {
    execArgv: ['--import=@poppinss/ts-exec'],
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  })
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  let exit: string | null = null
  child.once('exit', (code, signal) => (exit = `exited ${code ?? signal}: ${stderr.slice(-2000)}`))
  cleanup(() => void child.kill('SIGKILL'))
  const urls = await new Promise<{ adonis: string; fetch: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { adonis: string; fetch: string }))
    child.once('exit', () => reject(new Error(`the servers exited early: ${exit}`)))
  })
  return { ...urls, child, exited: () => exit }
}

/** A raw connection to `url`'s host and port, connected. */
function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket))
    socket.once('error', reject)
  })
}

const head = (method: string, path: string, headers: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-user: alice\r\nx-admin: yes\r\n` +
  Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('') +
  '\r\n'

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Declare 1000 bytes of JSON, send 9, then go away: `end` (FIN) or `reset` (RST). */
async function cutBody(url: string, path: string, how: 'end' | 'reset') {
  const socket = await open(url)
  socket.on('error', () => {})
  socket.write(head('POST', path, { 'content-type': 'application/json', 'content-length': 1000 }))
  socket.write('{"thread"')
  await settle(50)
  if (how === 'reset') socket.resetAndDestroy()
  else socket.end()
  await settle(50)
  socket.destroy()
}

/** Send `request` whole, wait for the first bytes of its response (a stream), then reset. */
async function cutResponse(url: string, request: string) {
  const socket = await open(url)
  socket.on('error', () => {})
  const first = new Promise<string>((resolve) => {
    let got = ''
    socket.on('data', (chunk) => {
      got += chunk
      // Past the headers and into the stream's events.
      if (/\r\n\r\n[\s\S]*data:/.test(got)) resolve(got)
    })
    socket.once('close', () => resolve(got))
  })
  socket.write(request)
  const got = await first
  socket.resetAndDestroy()
  return got
}

const post = (path: string, body: unknown) => {
  const text = JSON.stringify(body)
  return head('POST', path, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  }).concat(text)
}

const aguiInput = () => ({
  threadId: `t-${randomUUID()}`,
  runId: randomUUID(),
  messages: [{ id: 'u', role: 'user', content: 'go' }],
})

const chatInput = () => ({
  id: `c-${randomUUID()}`,
  messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
  trigger: 'submit-message',
})

/** The server still answers a plain request (the caller's thread list). */
async function serves(url: string, path: string) {
  const response = await fetch(`${url}${path}`, { headers: { 'x-user': 'alice' } })
  await response.text()
  return response.status
}

test.group('Stream errors end the request, never the process', () => {
  test('a body cut short or reset mid-body, on every body route of both transports', async ({
    assert,
    cleanup,
  }) => {
    const servers = await startServers(cleanup)
    const routes = [
      ['fetch', '/agui'],
      ['fetch', '/chat'],
      ['adonis', '/agui'],
      ['adonis', '/chat'],
      ['adonis', '/runs'],
      ['adonis', '/runs/r1/cancel'],
      ['adonis', '/items/r1/c1/approve'],
      // The admin form's route (its body is the bodyparser's: a form).
      ['adonis', '/admin/items/r1/c1/approve'],
    ] as const
    for (const [transport, path] of routes) {
      for (const how of ['end', 'reset'] as const) {
        await cutBody(servers[transport], path, how)
        assert.isNull(servers.exited(), `${transport} ${path} (${how})`)
        assert.equal(await serves(servers[transport], '/agui/threads'), 200)
      }
    }
    await settle(200)
    assert.isNull(servers.exited())
  }).timeout(60_000)

  test('a connection reset while the response streams, on every streamed route of both transports', async ({
    assert,
    cleanup,
  }) => {
    const servers = await startServers(cleanup)
    for (const transport of ['fetch', 'adonis'] as const) {
      const url = servers[transport]
      const agui = aguiInput()
      assert.include(await cutResponse(url, post('/agui', agui)), 'RUN_STARTED')
      assert.include(await cutResponse(url, head('GET', `/agui/runs/${agui.runId}`, {})), 'data:')
      assert.include(
        await cutResponse(url, head('GET', `/agui/threads/${agui.threadId}`, {})),
        'data:'
      )
      const chat = chatInput()
      assert.include(await cutResponse(url, post('/chat', chat)), '"type":"start"')
      assert.include(await cutResponse(url, head('GET', `/chat/${chat.id}/stream`, {})), 'data:')
      assert.isNull(servers.exited(), transport)
      assert.equal(await serves(url, '/agui/threads'), 200)
    }
    // A response body that fails mid-way, behind the host adapter: the connection ends.
    const broken = await fetch(`${servers.fetch}/broken`)
    await broken.text().catch(() => {})
    assert.isNull(servers.exited(), 'a failing response body')
    // The native routes and the admin's live feed (AdonisJS only).
    const url = servers.adonis
    const started = await fetch(`${url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({ message: 'go' }),
    })
    const { runId } = (await started.json()) as { runId: string }
    assert.include(await cutResponse(url, head('GET', `/runs/${runId}/stream`, {})), 'data:')
    await cutResponse(url, head('GET', '/admin/events', {}))
    await settle(200)
    assert.isNull(servers.exited())
    assert.equal(await serves(url, '/agui/threads'), 200)
    assert.equal(await serves(servers.fetch, '/agui/threads'), 200)
  }).timeout(60_000)

  test('the host adapter the docs show is the one these tests serve the handlers with', async ({
    assert,
  }) => {
    /** The `toNode` function of a source text, from its signature to its closing brace. */
    const toNodeOf = (text: string) => {
      const start = text.indexOf('export function toNode(')
      return text.slice(start, text.indexOf('\n}\n', start) + 2)
    }
    const docs = blocksOf('docs/agui.md', await readFile('docs/agui.md', 'utf8'))
      .map((block) => block.code)
      .find((code) => code.includes('export function toNode('))
    assert.isDefined(docs)
    const helper = await readFile('tests/helpers/fetch_node.ts', 'utf8')
    assert.equal(toNodeOf(`${docs!}\n`), toNodeOf(helper))
  })
})
