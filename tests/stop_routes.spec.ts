import { test } from '@japa/runner'
import type { AgentRunner } from '../src/runner/contract.js'
import { talkerUntilStopped } from './helpers/held_runner.js'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'
import { sleep } from './helpers/sink.js'
import { snapshot } from './helpers/parking.js'

const talker = talkerUntilStopped

const post = async (url: string, body: unknown, user = 'alice') => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': user },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  let json: any = null
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: response.status, text, json }
}

/** Wait until the stream holds the agent's first word (it is talking). */
async function talking(db: any, streamRunId: () => Promise<string | undefined>) {
  for (let i = 0; i < 200; i++) {
    const id = await streamRunId()
    if (id) {
      const row = await db
        .from('agent_stream_frames')
        .where('run_id', id)
        .where('kind', 'text')
        .first()
      if (row) return id
    }
    await sleep(20)
  }
  throw new Error('the agent never talked')
}

for (const transport of TRANSPORTS) {
  test.group(`Stop routes (${transport})`, () => {
    test('AG-UI: HttpAgent mid-answer, the thread stopped: RUN_FINISHED cancelled after the partial text', async ({
      assert,
      cleanup,
    }) => {
      const served = await serveDoors(transport, talker)
      cleanup(served.close)
      const threadId = `t-${randomUUID()}`
      // The official 1.0 client, declared: a stopped run ends with the `cancelled` outcome.
      const agent = new HttpAgent({
        url: `${served.url}/agui`,
        headers: { 'x-user': 'alice', 'X-AG-UI-Client-Version': '1.0.0' },
        threadId,
      })
      agent.messages = [{ id: 'u1', role: 'user', content: 'hi' }]
      const events: any[] = []
      const aguiRunId = `r-${randomUUID()}`
      const running = agent.runAgent(
        { runId: aguiRunId },
        {
          onEvent: ({ event }) => void events.push(event),
        }
      )
      await talking(
        served.db,
        async () =>
          (await served.db.from('agent_agui_runs').where('thread_id', threadId).first())
            ?.stream_run_id
      )
      // Another person cannot stop it, and learns nothing: the 404 of a missing thread.
      const before = await snapshot(served.db)
      const foreign = await post(`${served.url}/agui/threads/${threadId}/stop`, {}, 'bob')
      assert.equal(foreign.status, 404, foreign.text)
      assert.equal(foreign.json.code, 'not_found')
      const bad = await post(`${served.url}/agui/threads/${threadId}/stop`, { mode: 'later' })
      assert.equal(bad.status, 422, bad.text)
      assert.equal(bad.json.code, 'E_INVALID_STOP')
      assert.notInclude(bad.text, 'later')
      const strip = (s: any) =>
        JSON.stringify(s, (k, v) => (k === 'lease_expires_at' || k === 'updated_at' ? 0 : v))
      assert.equal(strip(await snapshot(served.db)), strip(before))
      const stopped = await post(`${served.url}/agui/threads/${threadId}/stop`, {})
      assert.equal(stopped.status, 200, stopped.text)
      assert.deepEqual(stopped.json, { status: 'cancelled' })
      await running.catch(() => {})
      const text = events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)
      assert.equal(text.join(''), 'Hello')
      const last = events.at(-1)
      assert.equal(last.type, 'RUN_FINISHED')
      assert.deepEqual(last.outcome, { type: 'cancelled' })
      // Idempotent; and the run's own stop route says the same.
      const again = await post(`${served.url}/agui/threads/${threadId}/stop`, undefined)
      assert.deepEqual([again.status, again.json], [200, { status: 'cancelled' }], again.text)
      const byRun = await post(`${served.url}/agui/runs/${aguiRunId}/stop`, {})
      assert.deepEqual([byRun.status, byRun.json], [200, { status: 'cancelled' }], byRun.text)
      const foreignRun = await post(`${served.url}/agui/runs/${aguiRunId}/stop`, {}, 'bob')
      assert.deepEqual([foreignRun.status, foreignRun.json?.code], [404, 'not_found'])
    })

    test('useChat: the chat stopped mid-turn: the turn ends with an abort chunk, the history keeps what was said', async ({
      assert,
      cleanup,
    }) => {
      const served = await serveDoors(transport, talker)
      cleanup(served.close)
      const chatId = `c-${randomUUID()}`
      const turn = post(`${served.url}/chat`, {
        id: chatId,
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
        trigger: 'submit-message',
      })
      await talking(
        served.db,
        async () =>
          (await served.db.from('agent_agui_runs').where('thread_id', chatId).first())
            ?.stream_run_id
      )
      const stopped = await post(`${served.url}/chat/${chatId}/stop`, { mode: 'keep' })
      assert.deepEqual([stopped.status, stopped.json], [200, { status: 'cancelled' }])
      const answer = await turn
      const chunks = answer.text
        .split('\n')
        .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
        .map((line) => JSON.parse(line.slice(6)))
      assert.equal(
        chunks
          .filter((c) => c.type === 'text-delta')
          .map((c) => c.delta)
          .join(''),
        'Hello'
      )
      assert.exists(chunks.find((c) => c.type === 'abort'))
      const messages = await fetch(`${served.url}/chat/${chatId}/messages`, {
        headers: { 'x-user': 'alice' },
      })
      assert.include(JSON.stringify(await messages.json()), 'Hello')
      // A chat nobody has: 404; a stop of a turn that ended by a stop: the same answer again.
      const none = await post(`${served.url}/chat/c-none/stop`, {})
      assert.equal(none.status, 404)
      const again = await post(`${served.url}/chat/${chatId}/stop`, {})
      assert.deepEqual([again.status, again.json], [200, { status: 'cancelled' }], again.text)
    })
  })
}

/** Answers at once, except to `wait`, which talks until stopped; records what it was given. */
function chatty(seen: string[][]): AgentRunner {
  return {
    async start(ctx) {
      const earlier: string[] = []
      for await (const frame of ctx.conversation()) {
        if (frame.t === 'text') earlier.push(frame.v)
        if (frame.t === 'event' && (frame.event as any).kind === 'user-message') {
          earlier.push(...(frame.event as any).parts.map((p: any) => p.text))
        }
      }
      seen.push(earlier)
      const message = (ctx.input as { message: string }).message
      await ctx.writer.write({ t: 'text', v: `re: ${message}` })
      if (message !== 'wait') return { status: 'finished' }
      await ctx.writer.flush?.()
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
}

for (const transport of TRANSPORTS) {
  test.group(`Stop routes, rollback (${transport})`, () => {
    test('a turn stopped with rollback leaves the conversation and the chat history; keep stays', async ({
      assert,
      cleanup,
    }) => {
      const seen: string[][] = []
      const served = await serveDoors(transport, chatty(seen))
      cleanup(served.close)
      const chatId = `c-${randomUUID()}`
      const say = (text: string, n: number) =>
        post(`${served.url}/chat`, {
          id: chatId,
          messages: [{ id: `u${n}`, role: 'user', parts: [{ type: 'text', text }] }],
          trigger: 'submit-message',
        })
      const stopTurn = async (n: number, mode: string) => {
        const turn = say('wait', n)
        await talking(served.db, async () => {
          const rows = await served.db.from('agent_agui_runs').where('thread_id', chatId)
          return rows.length === n ? rows.at(-1).stream_run_id : undefined
        })
        const stopped = await post(`${served.url}/chat/${chatId}/stop`, { mode })
        assert.deepEqual(
          [stopped.status, stopped.json],
          [200, { status: 'cancelled' }],
          stopped.text
        )
        await turn
      }
      await say('one', 1)
      await stopTurn(2, 'rollback')
      await stopTurn(3, 'keep')
      await say('four', 4)
      // The fourth turn was given turns one and three, never the rolled-back second.
      assert.deepEqual(seen.at(-1), ['one', 're: one', 'wait', 're: wait'])
      const messages = await fetch(`${served.url}/chat/${chatId}/messages`, {
        headers: { 'x-user': 'alice' },
      })
      const history = JSON.stringify(await messages.json())
      assert.equal(history.split('re: wait').length - 1, 1)
      assert.include(history, 're: four')
    })
  })
}

for (const transport of TRANSPORTS) {
  test.group(`Busy thread: interrupt and rollback (${transport})`, () => {
    test('useChat interrupt stops the talking turn (kept), AG-UI rollback stops it (left out), then the new message runs', async ({
      assert,
      cleanup,
    }) => {
      const seen: string[][] = []
      const served = await serveDoors(transport, chatty(seen))
      cleanup(served.close)
      const chatId = `c-${randomUUID()}`
      const waitFor = (n: number) =>
        talking(served.db, async () => {
          const rows = await served.db.from('agent_agui_runs').where('thread_id', chatId)
          return rows.length === n ? rows.at(-1).stream_run_id : undefined
        })
      const first = post(`${served.url}/chat`, {
        id: chatId,
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'wait' }] }],
        trigger: 'submit-message',
      })
      await waitFor(1)
      const second = post(`${served.url}/chat`, {
        id: chatId,
        multitaskStrategy: 'interrupt',
        messages: [{ id: 'u2', role: 'user', parts: [{ type: 'text', text: 'wait' }] }],
        trigger: 'submit-message',
      })
      assert.include((await first).text, '"type":"abort"')
      await waitFor(2)
      // The AG-UI door on the same thread: rollback stops the second turn and leaves it out.
      const third = await post(`${served.url}/agui`, {
        threadId: chatId,
        runId: `r-${randomUUID()}`,
        messages: [{ id: 'u3', role: 'user', content: 'three' }],
        forwardedProps: { multitaskStrategy: 'rollback' },
      })
      assert.equal(third.status, 200, third.text)
      assert.include((await second).text, '"type":"abort"')
      assert.include(third.text, 're: three')
      // The third turn saw the first (kept), never the second (rolled back).
      assert.deepEqual(seen.at(-1), ['wait', 're: wait'])
    })
  })
}
