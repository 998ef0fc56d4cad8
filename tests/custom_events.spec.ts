import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import type { StreamFrame } from '../src/core/frames.js'
import { InvalidFrameError } from '../src/errors.js'
import { DEFAULTS } from '../src/defaults.js'
import { MAX_JSON_DEPTH } from '../src/core/json_depth.js'
import { RUN_STATE_EVENT } from '../src/agui/translate/index.js'
import { resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { collect, runId, setupSink } from './helpers/sink.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'

/** CopilotKit's `PredictState`: its value is an array of `{ state_key, tool, tool_argument }`. */
const PREDICT = [{ state_key: 'document', tool: 'write_document', tool_argument: 'document' }]

/** Writes an allow-listed custom event, one that is not, and a legacy allow-listed kind. */
const runner: AgentRunner = {
  async start(ctx) {
    const write = (event: Record<string, unknown>) =>
      ctx.writer.write({ t: 'event', event: event as any })
    await write({ kind: 'custom', name: 'PredictState', value: PREDICT })
    await write({ kind: 'custom', name: 'internal', value: { plan: 'hidden plan' } })
    await write({ kind: 'progress', percent: 50, note: 'not listed' })
    await ctx.writer.write({ t: 'text', v: 'Done.' })
    return { status: 'finished' }
  },
  async resume() {
    return { status: 'finished' }
  },
}

const CONFIG = { agui: { customEvents: ['PredictState'], custom: { progress: ['percent'] } } }

/** The `data:` payloads of a useChat SSE body. */
const chunksOf = (body: string) =>
  body
    .split('\n\n')
    .filter((block) => block.includes('data: ') && !block.endsWith('[DONE]'))
    .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6)))

test.group('Custom events: any JSON value, allow-listed by name, bounded', () => {
  test('the sink refuses a custom event that breaks a rule by name, and stores nothing of it', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('custom')
    const writer = await sink.open(id)
    let deep: unknown = 'leaf'
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) deep = [deep]
    const big = 'x'.repeat(DEFAULTS.maxCustomValueBytes)
    const bad: [Record<string, unknown>, string, string][] = [
      [{ kind: 'custom', name: '', value: 1 }, 'event.name', 'minLength'],
      [{ kind: 'custom', name: 'n'.repeat(192), value: 1 }, 'event.name', 'maxLength'],
      [{ kind: 'custom', value: 1 }, 'event.name', 'required'],
      [{ kind: 'custom', name: 'PredictState' }, 'event.value', 'required'],
      [{ kind: 'custom', name: 'PredictState', value: [big] }, 'event.value', 'maxBytes'],
      [{ kind: 'custom', name: 'PredictState', value: deep }, 'event.value', 'maxDepth'],
    ]
    for (const [event, field, rule] of bad) {
      const error = await writer.write({ t: 'event', event: event as any }).then(
        () => null,
        (e) => e
      )
      assert.instanceOf(error, InvalidFrameError, rule)
      assert.equal(error.code, 'E_INVALID_FRAME')
      assert.deepInclude(error.issues, { field, rule })
      assert.notInclude(error.message, 'xxxx')
    }
    // Any JSON value passes: an array, a string, null, a value just within the bound.
    const good: StreamFrame[] = [
      { t: 'event', event: { kind: 'custom', name: 'PredictState', value: PREDICT } },
      { t: 'event', event: { kind: 'custom', name: 's', value: 'plain' } },
      { t: 'event', event: { kind: 'custom', name: 'n', value: null } },
      { t: 'event', event: { kind: 'custom', name: 'b', value: big.slice(10) } },
    ]
    for (const frame of good) await writer.write(frame)
    await writer.end()
    const stored = (await collect(sink.subscribe(id))).map(({ cursor, ...frame }) => frame)
    assert.deepEqual(stored, good)
  })

  test('AG-UI sends CUSTOM { name, value } with the value as written; native and useChat agree', async ({
    assert,
  }) => {
    const { url, app, agentStream } = await serveApp({ runner, ...CONFIG })
    await resetTables(await app.container.make('lucid.db'))
    const runIdValue = randomUUID()
    const response = await postJson(`${url}/agui`, runInput(`t-${randomUUID()}`, runIdValue))
    const events = parseSse(await response.text()).map((item) => item.event)
    await agentStream.driver.settled()
    await assertConforms(assert, events)
    const customs = events.filter((e) => e.type === 'CUSTOM' && e.name !== RUN_STATE_EVENT)
    assert.deepEqual(customs, [
      { type: 'CUSTOM', name: 'PredictState', value: PREDICT },
      { type: 'CUSTOM', name: 'progress', value: { percent: 50 } },
    ])
    assert.isArray(customs[0].value)

    // A re-attach replays the same.
    const again = await fetch(`${url}/agui/runs/${runIdValue}`, { headers: { 'x-user': 'alice' } })
    const replayed = parseSse(await again.text()).map((item) => item.event)
    await assertConforms(assert, replayed)
    assert.deepEqual(
      replayed.filter((e: WireEvent) => e.type === 'CUSTOM' && e.name !== RUN_STATE_EVENT),
      customs
    )

    // The native stream serves the frame as written; the unlisted name is dropped everywhere.
    const native = await fetch(`${url}/runs/${runIdValue}/stream`, {
      headers: { 'x-user': 'alice' },
    })
    const nativeText = await native.text()
    const frames = parseSse(nativeText).map((item) => item.event as any)
    assert.deepInclude(frames, {
      t: 'event',
      event: { kind: 'custom', name: 'PredictState', value: PREDICT },
    })
    for (const body of [nativeText, JSON.stringify(events), JSON.stringify(replayed)]) {
      assert.notInclude(body, 'hidden plan')
      assert.notInclude(body, 'internal')
    }

    // The useChat door: a `data-<name>` part with the value as written.
    const chat = await fetch(`${url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({
        id: `chat-${randomUUID()}`,
        messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
        trigger: 'submit-message',
      }),
    })
    const chatText = await chat.text()
    await agentStream.driver.settled()
    const chunks = chunksOf(chatText)
    assert.deepInclude(chunks, { type: 'data-PredictState', data: PREDICT })
    assert.deepInclude(chunks, { type: 'data-progress', data: { percent: 50 } })
    assert.notInclude(chatText, 'hidden plan')
  })

  test('without customEvents no custom event leaves, on any route', async ({ assert }) => {
    const { url, app, agentStream } = await serveApp({ runner })
    await resetTables(await app.container.make('lucid.db'))
    const runIdValue = randomUUID()
    const response = await postJson(`${url}/agui`, runInput(`t-${randomUUID()}`, runIdValue))
    const events = parseSse(await response.text()).map((item) => item.event)
    await agentStream.driver.settled()
    await assertConforms(assert, events)
    assert.deepEqual(
      events.filter((e) => e.type === 'CUSTOM' && e.name !== RUN_STATE_EVENT),
      []
    )
    const native = await fetch(`${url}/runs/${runIdValue}/stream`, {
      headers: { 'x-user': 'alice' },
    })
    const nativeText = await native.text()
    assert.notInclude(nativeText, 'PredictState')
    assert.notInclude(nativeText, 'hidden plan')
  })
})
