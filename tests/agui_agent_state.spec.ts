import { test } from '@japa/runner'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import { EventType, type BaseEvent, type RunAgentInput } from '@ag-ui/core'
import { EventEncoder } from '@ag-ui/encoder'
import { aguiAgent } from '../src/runners/agui_agent/index.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'

/**
 * The AG-UI agent runner and shared state, with a real `HttpAgent` pointed at a loopback AG-UI
 * SSE server (the official encoder): the remote's `STATE_SNAPSHOT` / `STATE_DELTA` become our
 * `state` frames and its `CUSTOM` events `custom` frames, which the package's AG-UI door serves
 * on; the page's state (`ctx.input.state`, on a start and sent with a resume) is the remote's
 * `RunAgentInput.state`.
 */

/** A loopback AG-UI server playing `script(input)` (SSE), keeping every input it was sent. */
async function scriptedServer(script: (input: RunAgentInput) => Record<string, unknown>[]) {
  const bodies: RunAgentInput[] = []
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    const input = JSON.parse(body) as RunAgentInput
    bodies.push(input)
    const encoder = new EventEncoder({ accept: 'text/event-stream' })
    res.writeHead(200, { 'content-type': encoder.getContentType() })
    const { threadId, runId } = input
    const events = [{ type: EventType.RUN_STARTED, threadId, runId }, ...script(input)]
    for (const event of events) res.write(encoder.encodeSSE(event as BaseEvent))
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    bodies,
    close: () =>
      new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}

const finished = (input: RunAgentInput, outcome?: unknown) => ({
  type: EventType.RUN_FINISHED,
  threadId: input.threadId,
  runId: input.runId,
  ...(outcome ? { outcome } : {}),
})

/**
 * A recipe agent: on a start it adds a step to the state it was sent (a delta: the page's state
 * is not yet the stream's), says so, adds another, sends a `PredictState` CUSTOM with an array
 * value, then asks to go on (an interrupt); on the resume it renames the recipe (a delta) and
 * finishes.
 */
const recipeScript = (input: RunAgentInput) => {
  const text = (messageId: string, delta: string) => [
    { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta },
    { type: EventType.TEXT_MESSAGE_END, messageId },
  ]
  if (input.resume) {
    return [
      { type: EventType.STATE_DELTA, delta: [{ op: 'replace', path: '/recipe', value: 'stew' }] },
      ...text(`m-${input.runId}`, 'Renamed.'),
      finished(input),
    ]
  }
  return [
    { type: EventType.STATE_DELTA, delta: [{ op: 'add', path: '/steps', value: ['chop'] }] },
    ...text(`m-${input.runId}`, 'Planning.'),
    { type: EventType.STATE_DELTA, delta: [{ op: 'add', path: '/steps/-', value: 'boil' }] },
    {
      type: EventType.CUSTOM,
      name: 'PredictState',
      value: [{ state_key: 'recipe', tool: 'write_recipe', tool_argument: 'recipe' }],
    },
    finished(input, {
      type: 'interrupt',
      interrupts: [{ id: 'int-1', reason: 'confirmation', message: 'Cook it?' }],
    }),
  ]
}

test.group('AG-UI agent runner | shared state with a remote AG-UI agent', () => {
  test('the remote STATE_DELTA / CUSTOM reach the page through the door; the page state reaches the remote, on the resume too', async ({
    assert,
    cleanup,
  }) => {
    const remote = await scriptedServer(recipeScript)
    cleanup(remote.close)
    const { url, close } = await serveRuntime(
      {
        runner: aguiAgent({ agent: new HttpAgent({ url: remote.url }) }),
        agui: { customEvents: ['PredictState'] },
      },
      (served, principal) => createAgUiFetchHandler(served.door, { basePath: '/agui', principal })
    )
    cleanup(close)
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Plan a soup' }],
      initialState: { recipe: 'soup' },
    })
    await client.runAgent()
    const first = recorder.events()
    await assertConforms(assert, first)
    // The page's state is the remote's RunAgentInput.state.
    assert.deepEqual(remote.bodies[0].state, { recipe: 'soup' })
    // The stream had no state: the first delta is served as the snapshot it leaves, the next
    // as the delta it is; the client's applier holds the remote's state.
    const states = first.filter((e) => e.type === 'STATE_SNAPSHOT' || e.type === 'STATE_DELTA')
    assert.deepEqual(
      states.map((e) => e.type),
      ['STATE_SNAPSHOT', 'STATE_DELTA']
    )
    assert.deepEqual(states[0].snapshot, { recipe: 'soup', steps: ['chop'] })
    assert.deepEqual(client.state, { recipe: 'soup', steps: ['chop', 'boil'] })
    // CUSTOM with its array value, as the remote sent it.
    const custom = first.find((e) => e.type === 'CUSTOM' && e.name === 'PredictState')!
    assert.deepEqual(custom.value, [
      { state_key: 'recipe', tool: 'write_recipe', tool_argument: 'recipe' },
    ])
    assert.lengthOf(client.pendingInterrupts, 1)

    // The page edits its state, then answers: the resume carries it to the remote.
    client.setState({ ...client.state, servings: 4 })
    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [client.pendingInterrupts[0].id]: {
          status: 'resolved',
          payload: { answers: { answer: ['yes'] } },
        },
      }),
    })
    const second = recorder.events()
    await assertConforms(assert, second)
    assert.deepEqual(remote.bodies[1].state, {
      recipe: 'soup',
      steps: ['chop', 'boil'],
      servings: 4,
    })
    assert.isDefined(remote.bodies[1].resume)
    // The page's state differs from the stream's: the remote's delta is served as a snapshot.
    assert.deepEqual(client.state, {
      recipe: 'stew',
      steps: ['chop', 'boil'],
      servings: 4,
    })
  }).timeout(30_000)
})
