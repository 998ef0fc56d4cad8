import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import type { UIMessageChunk } from 'ai'
import { uiMessageStreamAgent } from '../src/runners/ui_message_stream/index.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { emailAgent } from '../demo/agents/ui_message_stream.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf, waitUntil } from './helpers/sink.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'
import { within } from './helpers/bounded.js'

/**
 * The UI message stream runner (`uiMessageStreamAgent`) served through the AG-UI door with
 * `HttpAgent` (approval, resume, a second turn), and stopped mid-stream.
 */

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }

test.group('UI message stream runner | through the AG-UI door', () => {
  test('HttpAgent: the approval interrupt, the resume, a second turn that sees the first', async ({
    assert,
    cleanup,
  }) => {
    const sent: unknown[] = []
    const runner = await emailAgent({ db: null as never, onSend: (input) => sent.push(input) })
    const { url, close } = await serveRuntime({ runner }, (served, principal) =>
      createAgUiFetchHandler(served.door, { basePath: '/agui', principal })
    )
    cleanup(close)
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
    })
    await client.runAgent()
    await assertConforms(assert, recorder.events())
    assert.lengthOf(client.pendingInterrupts, 1)
    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [client.pendingInterrupts[0].id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    const second = recorder.events()
    await assertConforms(assert, second)
    assert.deepEqual(sent, [{ to: 'team@example.com' }])
    assert.equal(
      second
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      'Sent.'
    )
    client.addMessage({ id: 'u2', role: 'user', content: 'What did I ask?' })
    await client.runAgent()
    const third = recorder.events()
    await assertConforms(assert, third)
    assert.equal(
      third
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      'You asked: Send the weekly report / What did I ask?'
    )
  }).timeout(30_000)
})

test.group('UI message stream runner | a stop', () => {
  test('mid-stream: the producer sees its signal abort; what was said stays, the run ends cancelled', async ({
    assert,
  }) => {
    let aborted = false
    const runner = uiMessageStreamAgent({
      stream: ({ signal }) =>
        new ReadableStream<UIMessageChunk>({
          async start(controller) {
            controller.enqueue({ type: 'text-start', id: 't' })
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'Hello ' })
            await new Promise<void>((resolve) => {
              if (signal.aborted) resolve()
              signal.addEventListener('abort', () => resolve())
            })
            aborted = true
            controller.close()
          },
        }),
    })
    const stack = await setupRunner(runner)
    const id = runId('ui-stop')
    await stack.door.startRun(
      { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
      { message: 'hi' },
      alice
    )
    await waitUntil(
      async () => textOf(await collect(stack.sink.replay(id) as any)) === 'Hello ',
      'the first word'
    )
    const outcome = await stack.control.stop(id, decider)
    assert.equal(outcome.status, 'cancelled')
    await stack.driver.settled()
    assert.isTrue(aborted)
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'Hello ')
    assert.deepEqual(frames.at(-1).event, { kind: 'cancelled' })
  })

  test('a producer that ignores its signal: the read ends at the stop all the same', async ({
    assert,
  }) => {
    let cancelled = false
    const runner = uiMessageStreamAgent({
      stream: () =>
        new ReadableStream<UIMessageChunk>({
          start(controller) {
            controller.enqueue({ type: 'text-start', id: 't' })
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'Hello ' })
          },
          cancel() {
            cancelled = true
          },
        }),
    })
    const stack = await setupRunner(runner)
    const id = runId('ui-stop')
    await stack.door.startRun(
      { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
      { message: 'hi' },
      alice
    )
    await waitUntil(
      async () => textOf(await collect(stack.sink.replay(id) as any)) === 'Hello ',
      'the first word'
    )
    const started = Date.now()
    const outcome = await stack.control.stop(id, decider)
    assert.equal(outcome.status, 'cancelled')
    await within(stack.driver.settled(), 5_000, 'the runner did not return after the stop')
    // It returned on its own, before the stop's grace (2 s) would have ended the stream.
    assert.isBelow(Date.now() - started, 1_500)
    assert.isTrue(cancelled)
  }).timeout(10_000)
})
