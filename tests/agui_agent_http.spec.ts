import { test } from '@japa/runner'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import { EventType, type RunAgentInput } from '@ag-ui/core'
import { EventEncoder } from '@ag-ui/encoder'
import { aguiAgent } from '../src/runners/agui_agent/index.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { EmailAgent } from '../demo/agents/agui_agent.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf, waitUntil } from './helpers/sink.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'

/**
 * The AG-UI agent runner (`aguiAgent`) with a real `HttpAgent` pointed at loopback servers that
 * speak AG-UI SSE (the official encoder): the email agent through the package's AG-UI door, a
 * stop, an HTTP error.
 */

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }

/** A loopback AG-UI server (SSE, the official encoder) playing the email agent. */
async function emailServer(onSend: (input: { to: string }) => void) {
  const agent = new EmailAgent(onSend)
  const bodies: RunAgentInput[] = []
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    const input = JSON.parse(body) as RunAgentInput
    bodies.push(input)
    const encoder = new EventEncoder({ accept: 'text/event-stream' })
    res.writeHead(200, { 'content-type': encoder.getContentType() })
    for (const event of agent.events(input)) res.write(encoder.encodeSSE(event as never))
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

test.group('AG-UI agent runner | an HttpAgent pointed at a remote AG-UI server', () => {
  test('through the AG-UI door: approval, resume on the remote agent, a second turn that sees the first', async ({
    assert,
    cleanup,
  }) => {
    const sent: unknown[] = []
    const remote = await emailServer((input) => sent.push(input))
    cleanup(remote.close)
    const { url, close } = await serveRuntime(
      { runner: aguiAgent({ agent: new HttpAgent({ url: remote.url }) }) },
      (served, principal) => createAgUiFetchHandler(served.door, { basePath: '/agui', principal })
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
    assert.equal(client.pendingInterrupts[0].reason, 'tool_call')
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
    assert.deepEqual(JSON.parse(second.find((e) => e.type === 'TOOL_CALL_RESULT')!.content), {
      sent: true,
    })

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
    // The remote agent got the thread's messages: the first turn whole, then the new one.
    const last = remote.bodies.at(-1)!
    assert.deepEqual(
      last.messages.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant', 'user']
    )
    assert.equal(last.threadId, remote.bodies[0].threadId)
  }).timeout(30_000)
})

/** A loopback server answering every run with `answer(res)`, counting requests and closes. */
async function rawServer(answer: (res: import('node:http').ServerResponse) => void) {
  const seen = { requests: 0, closed: 0 }
  const server = createServer((req, res) => {
    seen.requests++
    req.resume()
    res.on('close', () => seen.closed++)
    answer(res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}

test.group('AG-UI agent runner | stops and failures of a remote agent', () => {
  test('a stop mid-run aborts the HTTP request; what was said stays, the run ends cancelled', async ({
    assert,
    cleanup,
  }) => {
    const encoder = new EventEncoder({ accept: 'text/event-stream' })
    const remote = await rawServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(
        encoder.encodeSSE({ type: EventType.RUN_STARTED, threadId: 't', runId: 'r' } as never)
      )
      res.write(
        encoder.encodeSSE({
          type: EventType.TEXT_MESSAGE_START,
          messageId: 'm',
          role: 'assistant',
        } as never)
      )
      res.write(
        encoder.encodeSSE({
          type: EventType.TEXT_MESSAGE_CONTENT,
          messageId: 'm',
          delta: 'Hello ',
        } as never)
      )
      // ... and then nothing: a remote agent thinking, until the client goes away.
    })
    cleanup(remote.close)
    const stack = await setupRunner(aguiAgent({ agent: new HttpAgent({ url: remote.url }) }))
    const id = runId('agui-stop')
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
    await waitUntil(() => remote.seen.closed === 1, 'the remote request closed')
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'Hello ')
    assert.deepEqual(frames.at(-1).event, { kind: 'cancelled' })
  }).timeout(15_000)

  test('an HTTP error from the remote agent fails the run with the fixed sentence, never its body', async ({
    assert,
    cleanup,
  }) => {
    const remote = await rawServer((res) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"secret":"sk-live-123"}')
    })
    cleanup(remote.close)
    const errors: unknown[] = []
    const error = console.error
    console.error = () => {}
    try {
      const { driver, sink } = await setupRunner(
        aguiAgent({ agent: new HttpAgent({ url: remote.url }), onError: (e) => errors.push(e) })
      )
      const id = runId()
      const outcome = await (await driver.start({ runId: id, input: 'Go', principal: alice })).done
      assert.deepEqual(outcome, { status: 'failed', code: 'run_failed' })
      const frames: any[] = await collect(sink.subscribe(id))
      assert.deepInclude(frames.at(-1), {
        t: 'error',
        code: 'run_failed',
        message: FAILURE_SENTENCES.run_failed,
      })
      assert.notInclude(JSON.stringify(frames), 'sk-live')
      assert.lengthOf(errors, 1)
      assert.include(String(errors[0]), '500')
    } finally {
      console.error = error
    }
  })
})
