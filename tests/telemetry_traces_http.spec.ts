import { test } from '@japa/runner'
import { ROOT_CONTEXT, SpanKind, context, trace, type Span } from '@opentelemetry/api'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { toNode } from './helpers/fetch_node.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { createRuntime } from '../src/runtime.js'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseSse } from './helpers/agui.js'
import { runInput } from './helpers/http.js'
import { runId, sleep } from './helpers/sink.js'
import { attributeText, installTracing, type PlainSpan } from './helpers/tracing.js'

/**
 * Both doors on a bare `node:http` server, each request's listener run in a SERVER span of its
 * own, as `@opentelemetry/instrumentation-http` does under `@adonisjs/otel`: the request's span
 * is the active context while the door serves it, and ends with its response.
 */
async function tracedDoors(cleanup: (fn: () => Promise<void>) => void) {
  const tracing = installTracing()
  cleanup(() => tracing.uninstall())
  const requests: Span[] = []
  const db = createDatabase()
  await resetTables(db)
  const runtime = createRuntime(db, { runner: scriptedAgent({ steps: ['reasoning', 'read'] }) })
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const agui = toNode(createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal }))
  const chat = toNode(createUiMessageFetchHandler(runtime.uiMessage, { principal }))
  const doors = { agui: runtime.door, uiMessage: runtime.uiMessage, rules: {} }
  const ds = toNode(
    createDurableStreamsFetchHandler(runtime.sink, { basePath: '/ds', principal, dialects: doors })
  )
  const server = createServer((req, res) => {
    const span = tracing.tracer.startSpan(`${req.method} ${req.url}`, { kind: SpanKind.SERVER })
    requests.push(span)
    res.on('close', () => span.end())
    context.with(trace.setSpan(ROOT_CONTEXT, span), () =>
      (req.url!.startsWith('/agui') ? agui : req.url!.startsWith('/ds/') ? ds : chat)(req, res)
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanup(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await runtime.driver.settled()
    await runtime.sink.shutdown()
    await db.manager.closeAll()
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const finished = async () => {
    // Each request's span ends with its response; a read's span just before.
    await sleep(50)
    return tracing.spans()
  }
  return { url, runtime, tracing, requests, finished }
}

const byName = (spans: PlainSpan[], name: string) => spans.filter((span) => span.name === name)

test.group('Traces over HTTP: the run under its request, re-attaches and replays as spans', () => {
  test('AG-UI: the root span is a child of the POST; a re-attach with Last-Event-ID is a span of its GET', async ({
    assert,
    cleanup,
  }) => {
    const { url, runtime, requests, finished } = await tracedDoors(cleanup)
    const thread = runId('thread')
    const run = runId('run')
    const posted = await fetch(`${url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify(runInput(thread, run)),
    })
    const body = await posted.text()
    const events = parseSse(body)
    assert.equal(events.at(-1)!.event.type, 'RUN_FINISHED')
    await runtime.driver.settled()
    // Re-attach after the third event that carried an id.
    const cursor = events.filter((item) => item.id)[2].id!
    const again = await fetch(`${url}/agui/runs/${run}`, {
      headers: { 'x-user': 'alice', 'last-event-id': cursor },
    })
    const reattached = await again.text()
    const rest = parseSse(reattached)
    assert.equal(rest.at(-1)!.event.type, 'RUN_FINISHED')

    const spans = await finished()
    const [post, get] = requests
    const root = byName(spans, 'invoke_agent agent')
    assert.lengthOf(root, 1)
    assert.equal(root[0].traceId, post.spanContext().traceId)
    assert.equal(root[0].parentSpanId, post.spanContext().spanId)
    assert.equal(root[0].attributes['gen_ai.conversation.id'], thread)
    // The stored trace context reaches no client: not in what either response carried.
    for (const served of [body, reattached]) {
      assert.notInclude(served, root[0].traceId)
      assert.notInclude(served, 'traceparent')
    }
    // The POST's own serving reads the stream live from its start.
    const reads = spans.filter((span) => span.name.startsWith('agent_stream.'))
    const ofPost = reads.find((span) => span.parentSpanId === post.spanContext().spanId)!
    assert.equal(ofPost.name, 'agent_stream.reattach')
    assert.equal(ofPost.attributes['agent_stream.cursor'], '0')
    // The GET: a span of that request, from the client's cursor, with the rows it read.
    const ofGet = reads.filter((span) => span.parentSpanId === get.spanContext().spanId)
    assert.lengthOf(ofGet, 1)
    // The run had ended: read up to its known end.
    assert.equal(ofGet[0].name, 'agent_stream.replay')
    assert.isFalse(ofGet[0].attributes['agent_stream.live'])
    assert.equal(ofGet[0].traceId, get.spanContext().traceId)
    assert.equal(ofGet[0].attributes['agent_stream.stream_run_id'], run)
    assert.equal(ofGet[0].attributes['agent_stream.cursor'], cursor.split(':')[0])
    const rows = ofGet[0].attributes['agent_stream.rows_read'] as number
    assert.isAbove(rows, 0)
    assert.isBelow(rows, ofPost.attributes['agent_stream.rows_read'] as number)
    // Nothing the agent wrote, nothing of the person.
    const values = attributeText(spans).join('\n')
    for (const secret of ['weekly numbers', 'Revenue was', 'alice']) {
      assert.notInclude(values, secret)
    }
  })

  test('useChat: the run and its turn read are spans of the POST that started them', async ({
    assert,
    cleanup,
  }) => {
    const { url, runtime, requests, finished } = await tracedDoors(cleanup)
    const chat = runId('chat')
    const posted = await fetch(`${url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({
        id: chat,
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'numbers please' }] }],
      }),
    })
    assert.equal(posted.status, 200)
    await posted.text()
    await runtime.driver.settled()
    const resumed = await fetch(`${url}/chat/${chat}/stream`, { headers: { 'x-user': 'alice' } })
    await resumed.text()

    const spans = await finished()
    const root = byName(spans, 'invoke_agent agent')
    assert.lengthOf(root, 1)
    assert.equal(root[0].parentSpanId, requests[0].spanContext().spanId)
    assert.equal(root[0].attributes['gen_ai.conversation.id'], chat)
    const reads = spans.filter((span) => span.name.startsWith('agent_stream.'))
    for (const read of reads) {
      assert.isTrue(
        requests.some((request) => request.spanContext().spanId === read.parentSpanId),
        `${read.name} is a span of a request`
      )
    }
    assert.isAtLeast(reads.length, 1)
    // The POST's turn, read live from its start, a span of the POST.
    const turn = reads.find((read) => read.parentSpanId === requests[0].spanContext().spanId)!
    assert.equal(turn.name, 'agent_stream.reattach')
    assert.equal(turn.attributes['agent_stream.cursor'], '0')
    assert.isAbove(turn.attributes['agent_stream.rows_read'] as number, 0)
    const values = attributeText(spans).join('\n')
    for (const secret of ['numbers please', 'Revenue was', 'alice']) {
      assert.notInclude(values, secret)
    }
  })

  test('Durable Streams: a catch-up read of a run in each dialect is a replay span of its GET', async ({
    assert,
    cleanup,
  }) => {
    const { url, runtime, requests, finished } = await tracedDoors(cleanup)
    const run = runId('run')
    const posted = await fetch(`${url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify(runInput(runId('thread'), run)),
    })
    await posted.text()
    await runtime.driver.settled()
    for (const dialect of ['frames', 'agui', 'ui-message']) {
      const read = await fetch(`${url}/ds/runs/${run}/${dialect}?offset=-1`, {
        headers: { 'x-user': 'alice' },
      })
      assert.equal(read.status, 200, dialect)
      await read.text()
    }
    const spans = await finished()
    const gets = requests.slice(1).map((request) => request.spanContext().spanId)
    assert.lengthOf(gets, 3)
    for (const get of gets) {
      const reads = spans.filter(
        (span) => span.parentSpanId === get && span.name.startsWith('agent_stream.')
      )
      assert.isAtLeast(reads.length, 1)
      for (const read of reads)
        assert.isAbove(read.attributes['agent_stream.rows_read'] as number, 0)
    }
  })
})
