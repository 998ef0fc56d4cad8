import { test } from '@japa/runner'
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api'
import { setupParking, setupRunner } from './helpers/parking.js'
import { Replica } from './helpers/replica.js'
import { runId, sleep } from './helpers/sink.js'
import { attributeText, installTracing, type PlainSpan } from './helpers/tracing.js'
import { emailScenario, finish, scriptedModel, text } from './helpers/ai_sdk.js'
import { jsonSchema, tool } from 'ai'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Everything of the scripted agent's approval run a span must never carry. */
const SECRETS = [
  'team@example.com',
  'Weekly report',
  'Send the weekly report',
  'All done',
  'secret-person',
]

const person = { id: 'secret-person', roles: ['ops'] }

/** The real SDK for this test, uninstalled (globals disabled) when it ends. */
function tracingFor(cleanup: (fn: () => Promise<void>) => void) {
  const tracing = installTracing()
  cleanup(() => tracing.uninstall())
  return tracing
}

function only(spans: PlainSpan[], name: string) {
  const found = spans.filter((span) => span.name === name)
  if (found.length !== 1) throw new Error(`${found.length} spans named ${name}`)
  return found[0]
}

test.group('Traces: a run is a trace, a park is a span', () => {
  test('one trace across a park and a resume on a second Node process', async ({
    assert,
    cleanup,
  }) => {
    const tracing = tracingFor(cleanup)
    const { driver, db } = await setupParking(
      { steps: ['approval'] },
      { telemetry: { agentName: 'mailer' } }
    )
    const id = runId('trace')
    // The request that starts the run: a server span, as @adonisjs/otel's HTTP instrumentation.
    const request = tracing.tracer.startSpan('POST /runs', { kind: SpanKind.SERVER })
    const outcome = await context.with(trace.setSpan(context.active(), request), async () => {
      const started = await driver.start({ runId: id, threadId: `${id}-thread`, principal: person })
      return started.done
    })
    request.end()
    assert.equal(outcome.status, 'parked')

    const local = tracing.spans()
    const root = only(local, 'invoke_agent mailer')
    assert.equal(root.traceId, request.spanContext().traceId)
    assert.equal(root.parentSpanId, request.spanContext().spanId)
    assert.deepInclude(root.attributes, {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'mailer',
      'gen_ai.conversation.id': `${id}-thread`,
      'agent_stream.run_id': id,
      'agent_stream.stream_run_id': id,
      'agent_stream.segment': 1,
      'agent_stream.outcome': 'parked',
    })
    // The person is never in a span unless the host opts in.
    assert.notProperty(root.attributes, 'enduser.id')
    // Stored server-side with the run, never in a frame.
    const row = await db.connection().from('agent_streams').where('run_id', id).first()
    assert.equal(JSON.parse(row.trace_context).traceparent, `00-${root.traceId}-${root.spanId}-01`)
    const frames = await db.connection().from('agent_stream_frames').where('run_id', id)
    assert.notInclude(JSON.stringify(frames), root.traceId)

    // The decision and the resume on a second process, with a tracer of its own.
    const replica = await Replica.start({}, { script: 'traces', agent: { steps: ['approval'] } })
    cleanup(() => replica.call({ op: 'exit' }).catch(() => {}))
    const decided = await replica.call({
      op: 'approve',
      runId: id,
      itemId: `${id}.call0`,
      principal: person,
    })
    assert.equal(decided.result, 'approved')
    await replica.call({ op: 'settled' })
    const { spans: remote } = (await replica.call({ op: 'spans' })) as { spans: PlainSpan[] }

    const park = only(remote, 'await_human send_email')
    assert.equal(park.traceId, root.traceId)
    assert.equal(park.parentSpanId, root.spanId)
    assert.deepInclude(park.attributes, {
      'gen_ai.operation.name': 'await_human',
      'gen_ai.tool.name': 'send_email',
      'gen_ai.tool.call.id': `${id}.call0`,
      'gen_ai.conversation.id': `${id}-thread`,
      'agent_stream.decision': 'approved',
      'agent_stream.decided_via': 'api',
      'agent_stream.approver': 'requester',
      'agent_stream.park': 1,
    })
    // From the ask to the decision, as stored (the database's clock).
    const item = await db.connection().from('agent_approvals').where('run_id', id).first()
    assert.equal(park.startMs, Number(item.created_at))
    assert.equal(park.endMs, Number(item.decided_at))
    assert.equal(park.endMs - park.startMs, Number(item.decided_at) - Number(item.created_at))

    const resumed = only(remote, 'invoke_agent agent')
    assert.equal(resumed.traceId, root.traceId)
    assert.equal(resumed.parentSpanId, root.spanId)
    assert.deepInclude(resumed.attributes, {
      'agent_stream.segment': 2,
      'agent_stream.outcome': 'finished',
      'agent_stream.run_id': id,
    })

    // Nothing secret in any attribute of either process.
    const values = attributeText([...local, ...remote]).join('\n')
    for (const secret of SECRETS) assert.notInclude(values, secret)
  }).timeout(60_000)

  test('enduser.id only when the host opts in', async ({ assert, cleanup }) => {
    const tracing = tracingFor(cleanup)
    const { driver } = await setupParking(
      { steps: ['approval'] },
      { telemetry: { enduserId: true } }
    )
    const id = runId('enduser')
    await (
      await driver.start({ runId: id, principal: person })
    ).done
    const root = only(tracing.spans(), 'invoke_agent agent')
    assert.equal(root.attributes['enduser.id'], 'secret-person')
    // No request span active: the run's trace starts at its root.
    assert.isNull(root.parentSpanId)
  })

  test('an expiry and a cancel are park spans too (decided_via expiry, cancel)', async ({
    assert,
    cleanup,
  }) => {
    const tracing = tracingFor(cleanup)
    const { driver, parking, db } = await setupParking({ steps: ['approval'], expiresInMs: 200 })
    const lapsing = runId('expiry')
    await (
      await driver.start({ runId: lapsing, principal: person })
    ).done
    await sleep(300)
    assert.equal(await parking.sweeper.expireLapsed(), 1)
    await driver.settled()

    const cancelled = runId('cancel')
    const fresh = await setupParking({ steps: ['approval'] }, {}, false)
    await (
      await fresh.driver.start({ runId: cancelled, principal: person })
    ).done
    await fresh.parking.decisions.cancel(cancelled, { principal: person })

    const spans = tracing.spans()
    const parks = spans.filter((span) => span.name === 'await_human send_email')
    const expired = parks.find((span) => span.attributes['agent_stream.run_id'] === lapsing)!
    const root = spans.find(
      (span) =>
        span.name === 'invoke_agent agent' && span.attributes['agent_stream.run_id'] === lapsing
    )!
    assert.equal(expired.parentSpanId, root.spanId)
    assert.deepInclude(expired.attributes, {
      'agent_stream.decision': 'expired',
      'agent_stream.decided_via': 'expiry',
    })
    const row = await db.connection().from('agent_approvals').where('run_id', lapsing).first()
    assert.equal(expired.endMs - expired.startMs, Number(row.decided_at) - Number(row.created_at))
    const stopped = parks.find((span) => span.attributes['agent_stream.run_id'] === cancelled)!
    assert.deepInclude(stopped.attributes, {
      'agent_stream.decision': 'cancelled',
      'agent_stream.decided_via': 'cancel',
    })
  })

  test('a failure: error.type is the stable code, status ERROR, no message', async ({
    assert,
    cleanup,
  }) => {
    const tracing = tracingFor(cleanup)
    const { driver } = await setupRunner({
      start: async () => {
        throw new Error('secret-person leaked team@example.com')
      },
      resume: async () => ({ status: 'finished' }),
    })
    const id = runId('failing')
    assert.equal((await (await driver.start({ runId: id })).done).status, 'failed')
    const root = only(tracing.spans(), 'invoke_agent agent')
    assert.equal(root.status.code, SpanStatusCode.ERROR)
    assert.isUndefined(root.status.message)
    assert.equal(root.attributes['error.type'], 'run_failed')
    assert.equal(root.attributes['agent_stream.outcome'], 'failed')
    for (const secret of SECRETS) assert.notInclude(attributeText([root]).join('\n'), secret)
  })

  test("the runner runs inside its segment's span: its own spans are children", async ({
    assert,
    cleanup,
  }) => {
    const tracing = tracingFor(cleanup)
    const { driver } = await setupRunner({
      name: 'planner',
      start: async (ctx) => {
        // What a framework's own telemetry does: a span in the active context.
        const span = tracing.tracer.startSpan('chat scripted')
        await ctx.writer.write({ t: 'text', v: 'hello' })
        span.end()
        return { status: 'finished' }
      },
      resume: async () => ({ status: 'finished' }),
    })
    await (
      await driver.start({ runId: runId('nested') })
    ).done
    const spans = tracing.spans()
    const root = only(spans, 'invoke_agent planner')
    assert.equal(only(spans, 'chat scripted').parentSpanId, root.spanId)
    assert.equal(root.attributes['gen_ai.agent.name'], 'planner')
  })

  test('no SDK registered: nothing is stored, the run is unchanged', async ({ assert }) => {
    const { driver, db } = await setupParking({ steps: ['approval'] })
    const id = runId('untraced')
    assert.equal((await (await driver.start({ runId: id })).done).status, 'parked')
    const row = await db.connection().from('agent_streams').where('run_id', id).first()
    assert.isNull(row.trace_context)
  })

  test('aiSdkAgent: the approved tool runs on resume as execute_tool, a child of the resumed segment', async ({
    assert,
    cleanup,
  }) => {
    const tracing = tracingFor(cleanup)
    const { runner } = await emailScenario(join(tmpdir(), `traces-${process.pid}.log`))
    const { driver, parking } = await setupRunner(runner)
    const id = runId('tools')
    assert.equal(
      (await (await driver.start({ runId: id, input: 'Mail the team', principal: person })).done)
        .status,
      'parked'
    )
    // Decided in a request of its own (a span of another trace): the park span links to it.
    const deciding = tracing.tracer.startSpan('POST /agui', { kind: SpanKind.SERVER })
    await context.with(trace.setSpan(context.active(), deciding), () =>
      parking.decisions.approve(id, 'call_9', { principal: person, via: 'chat' })
    )
    deciding.end()
    await driver.settled()

    const spans = tracing.spans()
    const segments = spans.filter((span) => span.name === 'invoke_agent agent')
    assert.lengthOf(segments, 2)
    const [root, resumed] = segments.sort(
      (a, b) =>
        Number(a.attributes['agent_stream.segment']) - Number(b.attributes['agent_stream.segment'])
    )
    const executed = only(spans, 'execute_tool send_email')
    assert.equal(executed.parentSpanId, resumed.spanId)
    assert.equal(executed.traceId, root.traceId)
    assert.deepInclude(executed.attributes, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'send_email',
      'gen_ai.tool.call.id': 'call_9',
    })
    assert.notEqual(executed.status.code, SpanStatusCode.ERROR)
    const park = only(spans, 'await_human send_email')
    assert.equal(park.attributes['agent_stream.decided_via'], 'chat')
    assert.equal(park.parentSpanId, root.spanId)
    assert.deepEqual(park.links, [deciding.spanContext().spanId])
    // The tool's input and output, the model's text: in no attribute.
    const values = attributeText(spans).join('\n')
    for (const secret of [
      'team@example.com',
      'Mail the team',
      'I will send it',
      'Sent.',
      'secret-person',
    ]) {
      assert.notInclude(values, secret)
    }
  })

  test('a replica killed mid-segment: its continuation is a segment span of the same trace', async ({
    assert,
    cleanup,
  }) => {
    const tracing = tracingFor(cleanup)
    const log = join(tmpdir(), `traces-continued-${process.pid}.log`)
    const lease = 1500
    const sendEmail = tool({
      inputSchema: jsonSchema<{ to: string }>({
        type: 'object',
        properties: { to: { type: 'string' } },
      }),
      needsApproval: true,
      execute: async () => ({ sent: true }),
    })
    const model = scriptedModel([[...text('Done.'), ...finish()]])
    const { sink, parking, driver, db } = await setupRunner(
      aiSdkAgent({ model, tools: { send_email: sendEmail } }),
      { leaseMs: lease }
    )
    const replica = await Replica.start({ leaseMs: lease } as any, {
      script: 'continuation',
      env: { TOOL_LOG: log, DIE_AT: 'mid-text', TRACES: '1' },
    })
    const id = runId('continued')
    assert.equal(
      (await replica.call({ op: 'start', runId: id, principal: person })).result,
      'parked'
    )
    const dying = new Promise<void>((resolve) =>
      replica.child.on('message', (message: any) => message.at === 'mid-text' && resolve())
    )
    const exited = new Promise((resolve) => replica.child.once('exit', resolve))
    replica.child.send({ id: 50, op: 'approve', runId: id, itemId: 'call_9', principal: person })
    await dying
    replica.kill('SIGKILL')
    await exited
    const deadline = Date.now() + 20_000
    while ((await sink.head(id))!.status === 'open' && Date.now() < deadline) {
      await parking.sweeper.settleLapsed()
      await sleep(200)
    }
    await driver.settled()
    assert.equal((await sink.head(id))!.status, 'ended')

    // The root span was made (and exported) by the dead replica: its context is stored.
    const row = await db.connection().from('agent_streams').where('run_id', id).first()
    const [, traceId, rootSpanId] = JSON.parse(row.trace_context).traceparent.split('-')
    const continued = only(tracing.spans(), 'invoke_agent agent')
    assert.equal(continued.traceId, traceId)
    assert.equal(continued.parentSpanId, rootSpanId)
    assert.deepInclude(continued.attributes, {
      'agent_stream.segment': 2,
      'agent_stream.continued': true,
      'agent_stream.outcome': 'finished',
    })
  }).timeout(60_000)
})
