import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import fastJsonPatch from 'fast-json-patch'
import { readUIMessageStream, type UIMessageChunk } from 'ai'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import type { StreamFrame } from '../src/core/frames.js'
import { resetTables } from './helpers/db.js'
import { postJson, readResponse, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, recordingFetch, type WireEvent } from './helpers/agui.js'

/**
 * Shared state both ways over HTTP: the agent's `state` frames as AG-UI `STATE_SNAPSHOT` /
 * `STATE_DELTA` and as the useChat `data-state` part; the page's state (`RunAgentInput.state`,
 * useChat's body `state`) as the runner's `ctx.input.state`, checked before anything is written.
 */

const state = (fields: Record<string, unknown>) =>
  ({ t: 'event', event: { kind: 'state', ...fields } }) as StreamFrame

/** A runner that records its input and, given the page's state, writes its own from it. */
function stateAgent() {
  const inputs: any[] = []
  const runner: AgentRunner = {
    async start(ctx: RunContext) {
      const input = ctx.input as { state?: Record<string, unknown> }
      inputs.push(input)
      if (input.state) {
        await ctx.writer.write(state({ snapshot: { ...input.state, steps: [] } }))
        await ctx.writer.write({ t: 'text', v: 'Working. ' })
        await ctx.writer.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'one' }] }))
        await ctx.writer.write({ t: 'event', event: { kind: 'step-start' } })
        await ctx.writer.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'two' }] }))
        await ctx.writer.write({ t: 'event', event: { kind: 'step-finish' } })
      }
      await ctx.writer.write({ t: 'text', v: 'Done.' })
      return { status: 'finished' }
    },
    async resume() {
      return { status: 'finished' }
    },
  }
  return { runner, inputs }
}

async function setup(config: Record<string, unknown> = {}) {
  const agent = stateAgent()
  const served = await serveApp({ runner: agent.runner, ...config })
  await resetTables(await served.app.container.make('lucid.db'))
  return { ...served, inputs: agent.inputs }
}

/** The state a client holds after `events`, from `initial`: snapshots replace, deltas patch. */
function applied(initial: unknown, events: WireEvent[]) {
  let held = structuredClone(initial)
  for (const event of events) {
    if (event.type === 'STATE_SNAPSHOT') held = structuredClone(event.snapshot)
    if (event.type === 'STATE_DELTA') {
      held = fastJsonPatch.applyPatch(held, event.delta, true, false).newDocument
    }
  }
  return held
}

const EXPECTED = { recipe: 'soup', steps: ['one', 'two'] }

test.group('Agent state over HTTP (AG-UI and useChat)', () => {
  test('AG-UI: RunAgentInput.state reaches the runner; the agent state streams as STATE_SNAPSHOT / STATE_DELTA', async ({
    assert,
  }) => {
    const { url, inputs } = await setup()
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Cook' }],
      initialState: { recipe: 'soup' },
    })
    await client.runAgent()
    assert.deepEqual(inputs[0].state, { recipe: 'soup' })
    const events = recorder.events() as WireEvent[]
    await assertConforms(assert, events)
    assert.deepEqual(
      events.filter((e) => e.type.startsWith('STATE_')).map((e) => e.type),
      ['STATE_SNAPSHOT', 'STATE_DELTA', 'STATE_DELTA']
    )
    // The door's projection is its own CUSTOM event, never the agent's state.
    const runState = events.find((e) => e.type === 'CUSTOM' && e.name === 'agent_stream.run_state')
    assert.deepInclude(runState!.value, { steps: 1 })
    assert.deepEqual(applied({}, events), EXPECTED)
    // The official client applied the same: its state is the agent's.
    assert.deepEqual(client.state, EXPECTED)

    // A replay of the stored run, and a re-attach after every event: the state a client that
    // never left holds, at every position.
    const runId = events[0].runId
    const replay = parseSse(
      await (await fetch(`${url}/agui/runs/${runId}`, { headers: { 'x-user': 'alice' } })).text()
    )
    const all = replay.map((item) => item.event)
    await assertConforms(assert, all)
    assert.deepEqual(applied({}, all), EXPECTED)
    for (let cut = 0; cut < replay.length - 1; cut++) {
      const lastId = replay.slice(0, cut + 1).findLast((item) => item.id)?.id
      if (!lastId) continue
      const before = applied({ page: 'own' }, all.slice(0, cut + 1))
      const rest = parseSse(
        await (
          await fetch(`${url}/agui/runs/${runId}`, {
            headers: { 'x-user': 'alice', 'last-event-id': lastId },
          })
        ).text()
      ).map((item) => item.event)
      await assertConforms(assert, rest)
      assert.deepEqual(applied(before, rest), EXPECTED, `re-attached after event ${cut}`)
      // The prelude's snapshot is the state as of the cursor (once the agent wrote one).
      const snapshot = rest.find((e) => e.type === 'STATE_SNAPSHOT')
      if (snapshot && rest.indexOf(snapshot) < 2) assert.deepEqual(snapshot.snapshot, before)
    }
  })

  test('AG-UI: an agent that writes no state sends no STATE_SNAPSHOT (the page keeps its own)', async ({
    assert,
  }) => {
    const { url, inputs } = await setup()
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Hi' }],
    })
    await client.runAgent()
    // HttpAgent sends `state: {}` by default: no page state for the runner.
    assert.notProperty(inputs[0], 'state')
    const events = recorder.events() as WireEvent[]
    await assertConforms(assert, events)
    assert.isFalse(events.some((e) => e.type === 'STATE_SNAPSHOT' || e.type === 'STATE_DELTA'))
    client.setState({ mine: true })
    assert.deepEqual(client.state, { mine: true })
  })

  test('AG-UI: a page state that is not an object, or over maxStateBytes, is refused with 400, nothing written', async ({
    assert,
  }) => {
    const { url, inputs } = await setup({ maxStateBytes: 64 })
    const threadId = `thread-${randomUUID()}`
    for (const [bad, rule] of [
      [[1, 2], 'object'],
      ['text', 'object'],
      [{ big: 'x'.repeat(100) }, 'maxBytes'],
    ] as const) {
      const answer = await readResponse(
        await postJson(`${url}/agui`, runInput(threadId, randomUUID(), { state: bad }))
      )
      assert.equal(answer.status, 400)
      assert.equal(answer.json.code, 'invalid_input')
      assert.include(answer.json.message, 'state')
      assert.include(answer.json.message, rule)
      assert.notInclude(answer.text, 'xxxxxxxx')
    }
    assert.lengthOf(inputs, 0)
    const threads = await readResponse(
      await fetch(`${url}/agui/threads/${threadId}/runs`, { headers: { 'x-user': 'alice' } })
    )
    assert.notEqual(threads.status, 200)
  })

  test('useChat: the body state reaches the runner; the agent state is one data-state part, replaced', async ({
    assert,
  }) => {
    const { url, inputs } = await setup()
    const chatId = `chat-${randomUUID()}`
    const response = await postJson(`${url}/chat`, {
      id: chatId,
      messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'Cook' }] }],
      trigger: 'submit-message',
      state: { recipe: 'soup' },
      other: 1,
    })
    assert.equal(response.status, 200)
    const chunks = (await response.text())
      .split('\n\n')
      .filter((block) => block.includes('data: '))
      .map((block) => block.slice(block.indexOf('data: ') + 6))
      .filter((data) => data !== '[DONE]')
      .map((data) => JSON.parse(data) as UIMessageChunk)
    assert.deepEqual(inputs[0].state, { recipe: 'soup' })
    assert.deepEqual(inputs[0].body, { other: 1 })
    const parts = chunks.filter((c) => c.type === 'data-state')
    assert.deepEqual(
      parts.map((c: any) => [c.id, c.data]),
      [
        ['state', { recipe: 'soup', steps: [] }],
        ['state', { recipe: 'soup', steps: ['one'] }],
        ['state', EXPECTED],
      ]
    )
    let message: any
    for await (const snapshot of readUIMessageStream({
      stream: new ReadableStream<UIMessageChunk>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk)
          controller.close()
        },
      }),
    })) {
      message = snapshot
    }
    const held = message.parts.filter((p: any) => p.type === 'data-state')
    assert.deepEqual(held, [{ type: 'data-state', id: 'state', data: EXPECTED }])

    const bad = await readResponse(
      await postJson(`${url}/chat`, {
        id: `chat-${randomUUID()}`,
        messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'Cook' }] }],
        state: ['no'],
      })
    )
    assert.equal(bad.status, 400)
    assert.equal(bad.json.code, 'invalid_input')
    assert.include(bad.json.message, 'state')
    assert.lengthOf(inputs, 1)
  })
})
