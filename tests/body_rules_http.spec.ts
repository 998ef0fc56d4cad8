import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { readResponse } from './helpers/http.js'
import { cookieClient, serveWebKit } from './helpers/web_kit.js'

/**
 * One body reader and one refusal shape on every body route of both transports: the same bodies
 * (empty strings inside, an empty body, invalid JSON, too large with and without a length, a
 * wrong media type, bytes that are not UTF-8, nested too deep, JSON that is not an object) sent
 * to each door's POST on the AdonisJS app (the web starter kit's: session, shield's CSRF, auth,
 * its bodyparser) and on the Fetch handlers give the same status and, for a refusal, the same
 * `{ code, message }`; the AdonisJS-only body routes (native start, a decision, a cancel) answer
 * every refusal as `{ code, message }` JSON too, never the bodyparser's plain text.
 */

type DoorName = 'agui' | 'chat'

const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`

const doorBody: Record<DoorName, (extra?: Record<string, unknown>) => Record<string, unknown>> = {
  agui: (extra = {}) => ({
    threadId: `t-${randomUUID()}`,
    runId: randomUUID(),
    messages: [{ id: 'u', role: 'user', content: 'go' }],
    ...extra,
  }),
  chat: (extra = {}) => ({
    id: `c-${randomUUID()}`,
    messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
    trigger: 'submit-message',
    ...extra,
  }),
}

interface BodyCase {
  name: string
  type?: string
  /** The body as sent, or a stream of it (no `Content-Length`: chunked). */
  body: (door: DoorName) => string | Uint8Array | { chunked: string }
}

/** The default cap (`DEFAULTS.maxBodyBytes`, 1 MiB). */
const CAP = 1_048_576

/** The table of bodies every door's POST is sent, on both transports. */
const BODIES: BodyCase[] = [
  {
    name: 'empty strings inside (an empty context value, an empty text part)',
    body: (door) =>
      JSON.stringify(
        door === 'agui'
          ? doorBody.agui({ context: [{ description: '', value: '' }], state: { note: '' } })
          : doorBody.chat({
              messages: [
                {
                  id: 'u0',
                  role: 'user',
                  parts: [
                    { type: 'text', text: '' },
                    { type: 'text', text: 'go' },
                  ],
                },
              ],
              note: '',
            })
      ),
  },
  { name: 'an empty body', body: () => '' },
  { name: 'invalid JSON', body: () => '{"threadId":' },
  { name: 'JSON that is not an object', body: () => '"go"' },
  { name: 'JSON null', body: () => 'null' },
  { name: 'too large, with its length', body: (door) => padded(door) },
  { name: 'too large, chunked', body: (door) => ({ chunked: padded(door) }) },
  {
    name: 'a wrong media type',
    type: 'text/plain',
    body: (door) => JSON.stringify(doorBody[door]()),
  },
  { name: 'a form', type: 'application/x-www-form-urlencoded', body: () => 'threadId=t1' },
  {
    name: 'bytes that are not UTF-8',
    body: (door) => {
      const text = JSON.stringify(doorBody[door]({ note: '@' }))
      const bytes = Buffer.from(text)
      bytes[text.indexOf('@')] = 0xff
      return new Uint8Array(bytes)
    },
  },
  {
    name: 'nested too deep',
    body: (door) => JSON.stringify(doorBody[door]()).replace(/}$/, `,"state":${deep(2000)}}`),
  },
  {
    name: 'nested 10,000 deep',
    body: (door) => JSON.stringify(doorBody[door]()).replace(/}$/, `,"state":${deep(10_000)}}`),
  },
]

/** A valid body padded with whitespace past the cap (the bytes received count). */
const padded = (door: DoorName) => `${JSON.stringify(doorBody[door]())}${' '.repeat(CAP)}`

function requestInit(kase: BodyCase, door: DoorName, headers: Record<string, string>): RequestInit {
  const body = kase.body(door)
  const chunked = typeof body === 'object' && 'chunked' in body
  return {
    method: 'POST',
    headers: { 'content-type': kase.type ?? 'application/json', ...headers },
    body: chunked ? new Blob([body.chunked]).stream() : (body as string | Uint8Array<ArrayBuffer>),
    ...(chunked ? { duplex: 'half' } : {}),
  } as RequestInit
}

/** What an answer is, to compare: its status, and a refusal's JSON body (a stream's is not). */
async function answerOf(response: Response) {
  const read = await readResponse(response)
  if (read.status === 200) return { status: 200 }
  return {
    status: read.status,
    type: read.headers.get('content-type'),
    body: read.json ?? read.text,
  }
}

async function fetchSide(cleanup: (fn: () => Promise<void>) => void) {
  const served = await serveRuntime(
    { runner: scriptedAgent({ steps: ['read'] }) },
    (runtime, principal) => {
      const agui = createAgUiFetchHandler(runtime.door, { principal, basePath: '/agui' })
      const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal })
      return (request) => (new URL(request.url).pathname.startsWith('/agui') ? agui : chat)(request)
    }
  )
  cleanup(served.close)
  return (door: DoorName, kase: BodyCase) =>
    fetch(`${served.url}/${door}`, requestInit(kase, door, { 'x-user': 'alice' }))
}

/** The web kit's app, signed in as alice, every write with shield's token as a page sends it. */
async function adonisSide() {
  const { url } = await serveWebKit({ runner: scriptedAgent({ steps: ['read'] }) })
  const alice = cookieClient(url)
  await alice.signIn('alice@example.com')
  return (path: string, kase: BodyCase, door: DoorName = 'agui') =>
    alice.fetch(`/agent${path}`, requestInit(kase, door, { 'x-xsrf-token': alice.xsrf()! }))
}

const isRefusal = (answer: { status: number; type?: string | null; body?: unknown }) =>
  answer.status >= 400 &&
  /^application\/json/.test(answer.type ?? '') &&
  typeof answer.body === 'object' &&
  answer.body !== null &&
  Object.keys(answer.body).sort().join() === 'code,message'

test.group('One body reader, one refusal shape, both transports', () => {
  test('every body to each door gives the same status and refusal on both transports', async ({
    assert,
    cleanup,
  }) => {
    const viaFetch = await fetchSide(cleanup)
    const viaAdonis = await adonisSide()
    for (const door of ['agui', 'chat'] as const) {
      for (const kase of BODIES) {
        const fetched = await answerOf(await viaFetch(door, kase))
        const adonis = await answerOf(await viaAdonis(`/${door}`, kase, door))
        assert.deepEqual(adonis, fetched, `${door}: ${kase.name}`)
        if (fetched.status !== 200) assert.isTrue(isRefusal(fetched), `${door}: ${kase.name}`)
      }
    }
  }).timeout(120_000)

  test('the bodies each door takes or refuses, as the table says', async ({ assert, cleanup }) => {
    const viaFetch = await fetchSide(cleanup)
    const expected: Record<string, [number, string?, string?]> = {
      'empty strings inside (an empty context value, an empty text part)': [200],
      'an empty body': [400, 'invalid_input', 'The body must be JSON'],
      'invalid JSON': [400, 'invalid_input', 'The body must be JSON'],
      'too large, with its length': [413, 'body_too_large', `The body exceeds ${CAP} bytes`],
      'too large, chunked': [413, 'body_too_large', `The body exceeds ${CAP} bytes`],
      'a wrong media type': [415, 'unsupported_media_type'],
      'a form': [415, 'unsupported_media_type'],
      'bytes that are not UTF-8': [400, 'invalid_input', 'The body must be UTF-8 JSON'],
    }
    for (const door of ['agui', 'chat'] as const) {
      for (const kase of BODIES) {
        const want = expected[kase.name]
        const got = await answerOf(await viaFetch(door, kase))
        if (!want) {
          // Refused by the door's own validator (naming the rule), the same on both transports.
          assert.equal(got.status, 400, `${door}: ${kase.name}`)
          continue
        }
        assert.equal(got.status, want[0], `${door}: ${kase.name}`)
        if (want[1]) assert.equal((got.body as any).code, want[1], `${door}: ${kase.name}`)
        if (want[2]) assert.equal((got.body as any).message, want[2], `${door}: ${kase.name}`)
      }
    }
  }).timeout(60_000)

  test('the AdonisJS-only body routes: every refusal is { code, message } JSON, an empty decision body is none', async ({
    assert,
  }) => {
    const viaAdonis = await adonisSide()
    const native = (message: unknown): BodyCase => ({
      name: 'native',
      body: () => JSON.stringify({ message }),
    })
    const routes = ['/runs', '/runs/r1/cancel', '/items/r1/c1/approve', '/items/r1/c1/answer']
    for (const path of routes) {
      for (const kase of BODIES.filter((one) => !one.name.startsWith('empty strings'))) {
        const answer = await answerOf(await viaAdonis(path, kase))
        assert.isTrue(isRefusal(answer), `${path}: ${kase.name}: ${JSON.stringify(answer)}`)
        const body = answer.body as { code: string }
        if (kase.name.startsWith('too large')) assert.equal(body.code, 'body_too_large', path)
        if (kase.name === 'invalid JSON') assert.equal(body.code, 'invalid_input', path)
        if (kase.name === 'a wrong media type') assert.equal(answer.status, 415, path)
        if (kase.name === 'an empty body' && path !== '/runs') {
          // No body on a decision or a cancel: none is read as `{}`, the route's own answer.
          assert.equal(answer.status, 404, `${path}: ${JSON.stringify(answer)}`)
        }
      }
    }
    // The native start: "" is a string kept as sent (refused by its own rule, not as null).
    const empty = await answerOf(await viaAdonis('/runs', native('')))
    assert.equal(empty.status, 422)
    assert.include((empty.body as any).message, '"minLength"')
    const started = await viaAdonis('/runs', native('go'))
    assert.equal(started.status, 201)
  }).timeout(120_000)
})
