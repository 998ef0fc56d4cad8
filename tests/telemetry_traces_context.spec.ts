import { test } from '@japa/runner'
import { ROOT_CONTEXT, SpanKind, context, trace, type Span } from '@opentelemetry/api'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { createRuntime } from '../src/runtime.js'
import { queued } from './helpers/busy_thread.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'
import { runInput } from './helpers/http.js'
import { askApproval, setupParking } from './helpers/parking.js'
import { runId, sleep, waitUntil } from './helpers/sink.js'
import { installTracing } from './helpers/tracing.js'
import { FAST, newSecret, signedReceiver, until } from './helpers/webhooks.js'

/**
 * Issue 25, traces: what a segment's span is a child of when the run has no stored trace
 * context (it started before an SDK was installed: a deploy that turns tracing on). It is a
 * root of its own trace (docs/observability.md), never a child of whatever span happens to be
 * active where the resume began (the deciding request's, or another run's).
 */

const person = { id: 'someone', roles: ['ops'] }

test.group('Traces: no context leaks into a run without a stored one', () => {
  test('a resume of a run started untraced is a root, not a child of the deciding request', async ({
    assert,
    cleanup,
  }) => {
    // Started with no SDK: nothing stored.
    const { driver, parking, db } = await setupParking({ steps: ['approval'] })
    const id = runId('untraced')
    assert.equal(
      (await (await driver.start({ runId: id, principal: person })).done).status,
      'parked'
    )
    const row = await db.connection().from('agent_streams').where('run_id', id).first()
    assert.isNull(row.trace_context)
    // Then an SDK; the decision lands inside a request's span.
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const request = tracing.tracer.startSpan('POST /decide')
    await context.with(trace.setSpan(ROOT_CONTEXT, request), () =>
      parking.decisions.approve(id, `${id}.call0`, { principal: person, via: 'chat' })
    )
    await driver.settled()
    request.end()
    const resumed = tracing.spans().filter((span) => span.name.startsWith('invoke_agent'))
    assert.lengthOf(resumed, 1)
    assert.notEqual(resumed[0].traceId, request.spanContext().traceId)
    assert.isNull(resumed[0].parentSpanId)
  })
})

test.group('Traces: a queued run is a trace of its own', () => {
  test('a run queued behind a parked run, started by the stop that cancels it, is a root', async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const db = createDatabase()
    await resetTables(db)
    let started = 0
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    cleanup(() => open())
    const runner: AgentRunner = {
      async start(ctx) {
        started++
        if (started === 1) {
          // Talking while the second message is queued, then parked.
          await ctx.writer.write({ t: 'text', v: 'thinking' })
          await ctx.writer.flush?.()
          await gate
          return askApproval(ctx)
        }
        await ctx.writer.write({ t: 'text', v: 'queued one answered' })
        return { status: 'finished' }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const runtime = createRuntime(db, { runner })
    const agui = toNode(
      createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal: () => person })
    )
    // Each request in a SERVER span of its own, as the HTTP instrumentation makes them.
    const requests = new Map<string, Span>()
    const server = createServer((req, res) => {
      const span = tracing.tracer.startSpan(`${req.method} ${req.url}`, { kind: SpanKind.SERVER })
      requests.set(`${req.method} ${req.url}`, span)
      res.on('close', () => span.end())
      context.with(trace.setSpan(ROOT_CONTEXT, span), () => agui(req, res))
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
    const post = (body: unknown) =>
      fetch(`${url}/agui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((response) => response.text())
    const thread = runId('thread')
    const [first, second] = [runId('parks'), runId('queued')]
    const firstBody = post(runInput(thread, first))
    await waitUntil(
      async () =>
        !!(await db.connection().from('agent_stream_frames').where('kind', 'text').first()),
      'the first run talking'
    )
    const queuedBody = post(
      runInput(thread, second, { forwardedProps: { multitaskStrategy: 'enqueue' } })
    )
    await queued(db, thread, 1)
    open()
    await firstBody
    await waitUntil(
      async () =>
        !!(await db.connection().from('agent_suspensions').where('status', 'parked').first()),
      'the run parked'
    )
    const stopped = await fetch(`${url}/agui/threads/${thread}/stop`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(stopped.status, 200, await stopped.text())
    assert.include(await queuedBody, 'queued one answered')
    await runtime.driver.settled()
    await sleep(50)
    const stop = requests.get(`POST /agui/threads/${thread}/stop`)!
    const root = tracing
      .spans()
      .find(
        (span) =>
          span.name === 'invoke_agent agent' && span.attributes['agent_stream.run_id'] === second
      )!
    assert.notEqual(root.traceId, stop.spanContext().traceId)
    assert.isNull(root.parentSpanId)
  })
})

test.group('Traces: the webhook deliverer runs in no request or run context', () => {
  test("a round woken by a commit inside a run is not part of that run's trace", async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const secret = newSecret()
    const receiver = await signedReceiver(secret)
    // A poll far away: only the commits' wake-ups start rounds here.
    const stack = await setupParking(
      { steps: [] },
      { webhooks: { ...FAST, pollIntervalMs: 600_000, endpoints: [{ url: receiver.url, secret }] } }
    )
    // What each round's first read runs under (what the HTTP client spans of its POSTs, under
    // `@adonisjs/otel`'s fetch instrumentation, would be children of).
    const active: (string | null)[] = []
    const rows = stack.webhooks!.deliverer.rows
    const due = rows.due.bind(rows)
    rows.due = (limit: number) => {
      active.push(trace.getActiveSpan()?.spanContext().traceId ?? null)
      return due(limit)
    }
    stack.webhooks!.deliverer.start()
    await until(() => active.length > 0)
    const request = tracing.tracer.startSpan('POST /agui')
    const id = runId('woken')
    await context.with(trace.setSpan(ROOT_CONTEXT, request), async () => {
      await (
        await stack.driver.start({ runId: id })
      ).done
    })
    await stack.driver.settled()
    request.end()
    await receiver.wait((r) => r.event.type === 'run.finished')
    await stack.webhooks!.deliverer.stop()
    assert.isAbove(active.length, 1)
    assert.deepEqual([...new Set(active)], [null])
  })
})
