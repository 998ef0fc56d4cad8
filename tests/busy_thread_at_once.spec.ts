import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { DefaultChatTransport, type UIMessage, type UIMessageChunk } from 'ai'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'
import { heldRunner } from './helpers/held_runner.js'
import { postJson, readResponse, runInput } from './helpers/http.js'
import { setupRunner } from './helpers/parking.js'
import { queued as queuedIn } from './helpers/busy_thread.js'
import type { Database } from '@adonisjs/lucid/database'
import { tableNames } from '../src/store/schema.js'

/**
 * Issue 22: two messages sent at the same moment on one thread ("double texting" at its
 * sharpest). The busy-thread policy holds even then: the run of one is recorded as the thread's
 * turn in the transaction that opens its stream, the other is judged again against the thread
 * as it is now. `reject`: one starts, the other gets 409 `thread_busy`; `enqueue`: both run, one
 * after the other. Never two runs of one thread at once.
 */

const ROUNDS = 5

/** Streams no run of a door owns: what a message that lost its thread's turn must not leave. */
async function orphanStreams(db: Database) {
  const { streams, aguiRuns } = tableNames()
  const rows = await db
    .connection()
    .from(streams)
    .whereNotIn('run_id', (query) => query.from(aguiRuns).select('stream_run_id'))
    .select('run_id')
  return rows.map((row) => row.run_id as string)
}

for (const transport of TRANSPORTS) {
  test.group(`Busy thread: messages at once (${transport})`, () => {
    test('AG-UI reject: of three at once on an idle thread one starts, two get thread_busy', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      const holds: string[] = []
      cleanup(() => holds.forEach((hold) => held.release(hold)))
      const said = (threadId: string, content: string) =>
        runInput(threadId, `run-${randomUUID()}`, {
          messages: [{ id: `u-${randomUUID()}`, role: 'user', content }],
        })
      for (let round = 0; round < ROUNDS; round++) {
        const threadId = `thread-${randomUUID()}`
        holds.push(`hold ${round}`)
        // The thread has had a turn already in every other round (idle after it).
        if (round % 2) {
          const first = await readResponse(await postJson(`${url}/agui`, said(threadId, 'go')))
          assert.equal(first.status, 200)
        }
        const responses = await Promise.all(
          [0, 1, 2].map(() => postJson(`${url}/agui`, said(threadId, `hold ${round}`)))
        )
        const statuses = responses.map((r) => r.status).sort()
        const refusals = await Promise.all(
          responses.filter((r) => r.status !== 200).map(async (r) => readResponse(r))
        )
        assert.deepEqual(statuses, [200, 409, 409], JSON.stringify(refusals.map((a) => a.json)))
        for (const refused of refusals) assert.equal(refused.json.code, 'thread_busy')
        held.release(`hold ${round}`)
        await Promise.all(responses.filter((r) => r.status === 200).map((r) => r.text()))
      }
      assert.equal(held.maxActive, 1)
      assert.deepEqual(await orphanStreams(db), [])
    })

    test('useChat enqueue: two messages at once both run, one after the other', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      for (let round = 0; round < ROUNDS; round++) {
        const chatId = `chat-${randomUUID()}`
        const transportOf = () =>
          new DefaultChatTransport<UIMessage>({
            api: `${url}/chat`,
            headers: { 'x-user': 'alice' },
          })
        const send = async (text: string) => {
          const stream = await transportOf().sendMessages({
            trigger: 'submit-message',
            chatId,
            messageId: undefined,
            messages: [{ id: `u-${randomUUID()}`, role: 'user', parts: [{ type: 'text', text }] }],
            abortSignal: undefined,
          })
          let said = ''
          for await (const chunk of stream as unknown as AsyncIterable<UIMessageChunk>) {
            if (chunk.type === 'text-delta') said += chunk.delta
          }
          return said
        }
        const answers = await Promise.all([send(`A${round}`), send(`B${round}`)])
        assert.deepEqual(answers, [`answer to A${round}`, `answer to B${round}`])
      }
      assert.equal(held.maxActive, 1)
      assert.deepEqual(await orphanStreams(db), [])
    })
  })
}

test.group('Busy thread: a message queued as its run ends', () => {
  test('queued just after the run it waits for ended: it starts at once, not at a sweep', async ({
    assert,
  }) => {
    const held = heldRunner()
    const stack = await setupRunner(held.runner)
    const threadId = `thread-${randomUUID()}`
    const first = await stack.door.startRun(
      { runId: `run-${randomUUID()}`, threadId, ownerId: 'alice', clientTools: [] },
      { message: 'A' },
      { id: 'alice' }
    )
    assert.isObject(first)
    await stack.driver.settled()
    // The door judged the thread busy, then its run ended (its end found the queue empty)
    // before this enqueue landed: no run end and no sweeper will start it.
    const runId = `run-${randomUUID()}`
    const queued = await stack.queue.enqueue({
      run: { runId, threadId, ownerId: 'alice', clientTools: [] },
      input: { message: 'B' },
      principal: { id: 'alice' },
      said: null,
    })
    assert.deepEqual(queued, { position: 1 })
    await held.started('B')
    await stack.driver.settled()
    assert.deepEqual(held.log, ['start:A', 'end:A', 'start:B', 'end:B'])
    assert.isNotNull(await stack.door.runs.find(runId))
  })
})

for (const transport of TRANSPORTS) {
  test.group(`Busy thread: interrupt with messages queued (${transport})`, () => {
    test('the interrupt stops the talking run only: a queued message that starts meanwhile runs whole', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(() => held.releaseAll())
      cleanup(close)
      for (let round = 0; round < 3; round++) {
        const threadId = `thread-${randomUUID()}`
        const agent = (content: string) =>
          new HttpAgent({
            url: `${url}/agui`,
            threadId,
            headers: { 'x-user': 'alice' },
            initialMessages: [{ id: `u-${randomUUID()}`, role: 'user', content }],
          })
        const first = agent(`hold A${round}`).runAgent()
        await held.started(`hold A${round}`)
        const queued = agent(`hold Q${round}`).runAgent({
          forwardedProps: { multitaskStrategy: 'enqueue' },
        })
        await queuedIn(db, threadId, 1)
        const interrupting = agent(`M${round}`).runAgent({
          forwardedProps: { multitaskStrategy: 'interrupt' },
        })
        await first
        // The queued message started (on the stopped run's end) or waits behind M.
        await Promise.race([held.started(`hold Q${round}`), interrupting])
        held.release(`hold Q${round}`)
        const [fromQueue, fromM] = await Promise.all([queued, interrupting])
        const said = (result: typeof fromM) =>
          result.newMessages
            .filter((m) => m.role === 'assistant')
            .map((m) => m.content)
            .join('')
        assert.equal(said(fromM), `answer to M${round}`)
        assert.equal(said(fromQueue), `answer to hold Q${round}`)
        // Only the run that talked when M came was stopped.
        assert.deepEqual(
          held.aborted,
          Array.from({ length: round + 1 }, (_, i) => `hold A${i}`)
        )
      }
      assert.equal(held.maxActive, 1)
      assert.deepEqual(await orphanStreams(db), [])
    })
  })
}

test.group('Busy thread: a replica whose clock is behind', () => {
  test('the next turn is recorded after the newest whatever this replica’s clock says', async ({
    assert,
  }) => {
    const held = heldRunner()
    const stack = await setupRunner(held.runner)
    const threadId = `thread-${randomUUID()}`
    const turn = (runId: string, message: string) =>
      stack.door.startRun(
        { runId, threadId, ownerId: 'alice', clientTools: [] },
        { message },
        { id: 'alice' }
      )
    const first = `run-${randomUUID()}`
    await turn(first, 'A')
    await stack.driver.settled()
    // The first turn was recorded by a replica whose clock is a minute ahead of this one's.
    const { aguiRuns } = tableNames()
    const ahead = Date.now() + 60_000
    await stack.db.from(aguiRuns).where('run_id', first).update({ created_at: ahead })
    const second = `run-${randomUUID()}`
    assert.isObject(await turn(second, 'B'))
    await stack.driver.settled()
    const latest = await stack.door.runs.latest(threadId)
    assert.equal(latest?.runId, second)
    assert.isAbove(latest!.createdAt, ahead)
  })
})
