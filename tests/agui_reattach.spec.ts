import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { decode, AGUI_MEDIA_TYPE } from '@ag-ui/proto'
import type { Interrupt, RunFinishedEvent } from '@ag-ui/core'
import type { AgentRunner } from '../src/runner/contract.js'
import type { AgUiInterrupt, FrameTranslator } from '../src/agui/translate/index.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'

// Type-level: what the door mints is assignable to @ag-ui/core's types (tsc checks this file).
const interruptCheck: Interrupt = null as unknown as AgUiInterrupt
const outcomeCheck: NonNullable<RunFinishedEvent['outcome']> = null as unknown as ReturnType<
  FrameTranslator['outcome']
>
void [interruptCheck, outcomeCheck]

/** What a client ends up holding: text per message, arguments and results per tool call. */
function view(events: WireEvent[]) {
  const text: Record<string, string> = {}
  const args: Record<string, string> = {}
  const results: Record<string, string> = {}
  const activity: Record<string, unknown> = {}
  for (const e of events) {
    if (e.type === 'TEXT_MESSAGE_CONTENT') text[e.messageId] = (text[e.messageId] ?? '') + e.delta
    if (e.type === 'TOOL_CALL_ARGS') args[e.toolCallId] = (args[e.toolCallId] ?? '') + e.delta
    if (e.type === 'TOOL_CALL_RESULT') results[e.toolCallId] = e.content
    if (e.type === 'ACTIVITY_SNAPSHOT') activity[e.messageId] = e.content
  }
  return { text, args, results, activity }
}

async function get(url: string, after?: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${after ? `?after=${after}` : ''}`, {
    headers: { 'x-user': 'alice', ...headers },
  })
  return response
}

test.group('AG-UI door: re-attach, framing, protobuf', () => {
  test('re-attached at EVERY cursor of a stored run: official checks pass, nothing lost or doubled', async ({
    assert,
  }) => {
    const served = await serveApp({
      runner: scriptedAgent({ steps: ['reasoning', 'read', 'child'] }),
      agui: { reasoning: true, stateDeltas: true },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const threadId = `t-${randomUUID()}`
    const post = async (body: unknown) => (await postJson(`${served.url}/agui`, body)).text()
    const first = randomUUID()
    const parkedEvents = parseSse(await post(runInput(threadId, first)))
    const [interrupt] = parkedEvents.at(-1)!.event.outcome.interrupts
    const second = randomUUID()
    await post({
      threadId,
      runId: second,
      messages: [],
      resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }],
    })
    await served.agentStream.driver.settled()

    let checked = 0
    for (const runId of [first, second]) {
      const full = parseSse(await (await get(`${served.url}/agui/runs/${runId}`)).text())
      await assertConforms(
        assert,
        full.map((e) => e.event)
      )
      const whole = view(full.map((e) => e.event))
      const cursors = full.filter((e) => e.id).map((e) => e.id!)
      assert.isAbove(cursors.length, 3)
      for (const cursor of cursors) {
        const reattached = parseSse(
          await (await get(`${served.url}/agui/runs/${runId}`, cursor)).text()
        ).map((e) => e.event)
        await assertConforms(assert, reattached)
        assert.equal(reattached[0].type, 'RUN_STARTED')
        assert.equal(reattached[0].runId, runId)
        const had = full.slice(0, full.findLastIndex((e) => e.id === cursor) + 1)
        assert.deepEqual(
          view([...had.map((e) => e.event), ...reattached]),
          whole,
          `after ${cursor}`
        )
        checked++
      }
    }
    assert.isAbove(checked, 10)
  })

  test('SSE framing: LF only, headers flushed at once, a heartbeat while idle, Last-Event-ID', async ({
    assert,
  }) => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const slow: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({ t: 'text', v: 'Thinking' })
        await ctx.writer.flush?.()
        await gate
        await ctx.writer.write({ t: 'text', v: ' done.' })
        return { status: 'finished' }
      },
      async resume() {
        return { status: 'finished' }
      },
    }
    const served = await serveApp({ runner: slow, agui: { heartbeat: '30ms' } })
    await resetTables(await served.app.container.make('lucid.db'))
    const runId = randomUUID()
    const response = await postJson(`${served.url}/agui`, runInput('t', runId))
    // Headers arrived while the run is still going.
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8')
    assert.equal(response.headers.get('cache-control'), 'no-cache, no-transform')
    assert.equal(response.headers.get('x-accel-buffering'), 'no')
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let body = ''
    let byHeader: Promise<Response>
    const started = Date.now()
    try {
      // The first text and, while the run waits, a heartbeat.
      while (!body.includes(': ping\n\n') || !body.includes('Thinking')) {
        const chunk = await reader.read()
        if (chunk.done) throw new Error(`the stream ended early: ${body}`)
        body += decoder.decode(chunk.value)
      }
      if (process.env.DEBUG_SSE) console.error('text and ping after', Date.now() - started, 'ms')
      // Re-attach by Last-Event-ID while it is still open.
      const ids = parseSse(body).filter((e) => e.id)
      byHeader = get(`${served.url}/agui/runs/${runId}`, undefined, {
        'last-event-id': ids.at(-1)!.id!,
      })
    } finally {
      release()
    }
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      body += decoder.decode(chunk.value)
    assert.notInclude(body, '\r')
    const events = parseSse(body).map((e) => e.event)
    await assertConforms(assert, events)
    const rest = parseSse(await (await byHeader).text()).map((e) => e.event)
    await assertConforms(assert, rest)
    assert.deepEqual(
      rest.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta),
      [' done.']
    )
  })

  test('protobuf only for exactly the AG-UI media type; the same events as SSE', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: scriptedAgent({ steps: ['read'] }) })
    await resetTables(await served.app.container.make('lucid.db'))
    const runId = randomUUID()
    await postJson(`${served.url}/agui`, runInput('t', runId)).then((r) => r.text())
    const sse = parseSse(await (await get(`${served.url}/agui/runs/${runId}`)).text())
    const wildcard = await get(`${served.url}/agui/runs/${runId}`, undefined, { accept: '*/*' })
    assert.match(wildcard.headers.get('content-type')!, /^text\/event-stream/)
    await wildcard.text()
    const proto = await get(`${served.url}/agui/runs/${runId}`, undefined, {
      accept: AGUI_MEDIA_TYPE,
    })
    assert.equal(proto.headers.get('content-type'), AGUI_MEDIA_TYPE)
    const bytes = new Uint8Array(await proto.arrayBuffer())
    const decoded: WireEvent[] = []
    for (let at = 0; at < bytes.length;) {
      const length = new DataView(bytes.buffer, at, 4).getUint32(0, false)
      decoded.push(decode(bytes.slice(at + 4, at + 4 + length)) as WireEvent)
      at += 4 + length
    }
    assert.deepEqual(
      decoded.map((e) => e.type),
      sse.map((e) => e.event.type)
    )
  })
})
