import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import type { AgentRunner } from '../src/runner/contract.js'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'
import { parseSse } from './helpers/agui.js'
import { sleep, waitUntil } from './helpers/sink.js'

/**
 * Issue 22: `HttpAgent.abortRun()`, the AG-UI client's abort. It ends the client's request; the
 * run stops only where that is asked: `agui.abortOnDisconnect`, or an agent whose `abortRun()`
 * calls the thread's stop route (docs/run-control.md, `StoppingHttpAgent`). Either way the
 * partial answer stays, every reader gets `RUN_FINISHED` cancelled and the next run starts.
 */

/** The docs' `StoppingHttpAgent` (docs/run-control.md, "A disconnect is not a stop"). */
class StoppingHttpAgent extends HttpAgent {
  abortRun() {
    const stop = `${this.url}/threads/${encodeURIComponent(this.threadId)}/stop`
    this.fetch(stop, {
      method: 'POST',
      headers: { ...this.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'keep' }),
    }).catch((error: unknown) => console.error('stop failed', error))
    super.abortRun()
  }
}

/** Says `Hello` and talks until its signal aborts; a message `quick` is answered at once. */
function talker(seen: { aborted: number }): AgentRunner {
  return {
    async start(ctx) {
      const said = JSON.stringify(ctx.input)
      if (said.includes('quick')) {
        await ctx.writer.write({ t: 'text', v: 'Quick answer' })
        return { status: 'finished' }
      }
      await ctx.writer.write({ t: 'text', v: 'Hello' })
      await ctx.writer.flush?.()
      await new Promise<void>((resolve) => {
        const done = () => {
          seen.aborted++
          resolve()
        }
        if (ctx.signal.aborted) done()
        else ctx.signal.addEventListener('abort', done)
      })
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
}

/** Alice, on the AG-UI 1.0 client: a stopped run ends with the `cancelled` outcome. */
const headers = { 'x-user': 'alice', 'X-AG-UI-Client-Version': '1.0.0' }

/** The stored run, replayed by the door (`GET /agui/runs/:runId`): its events. */
async function replayed(url: string, runId: string) {
  const response = await fetch(`${url}/agui/runs/${runId}`, { headers })
  return parseSse(await response.text()).map((e) => e.event as any)
}

/** Run `agent` until its first word arrives, then `abortRun()`; resolves the run's id. */
async function abortMidAnswer(agent: HttpAgent) {
  const runId = `r-${randomUUID()}`
  agent.messages = [{ id: randomUUID(), role: 'user', content: 'hi' }]
  let said = false
  const running = agent.runAgent({ runId }, { onTextMessageContentEvent: () => void (said = true) })
  // The rejection of the aborted request is the client's own: awaited below, not swallowed.
  const ended = running.then(
    () => 'finished',
    (error: unknown) => `rejected: ${(error as Error)?.name}`
  )
  await waitUntil(async () => said, 'the first word')
  agent.abortRun()
  await ended
  return runId
}

for (const transport of TRANSPORTS) {
  test.group(`AG-UI abortRun (${transport})`, () => {
    test('abortOnDisconnect: abortRun stops the run: cancelled, the partial answer kept, the next run starts', async ({
      assert,
      cleanup,
    }) => {
      const seen = { aborted: 0 }
      const served = await serveDoors(transport, talker(seen), {
        agui: { abortOnDisconnect: true },
      })
      cleanup(served.close)
      const threadId = `t-${randomUUID()}`
      const agent = new HttpAgent({ url: `${served.url}/agui`, headers, threadId })
      const runId = await abortMidAnswer(agent)
      await waitUntil(async () => seen.aborted === 1, "the agent's signal")
      const events = await replayed(served.url, runId)
      const text = events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)
      assert.equal(text.join(''), 'Hello')
      assert.equal(events.at(-1).type, 'RUN_FINISHED')
      assert.deepEqual(events.at(-1).outcome, { type: 'cancelled' })
      // The thread is free: the next run is answered.
      const next = new HttpAgent({ url: `${served.url}/agui`, headers, threadId })
      next.messages = [{ id: randomUUID(), role: 'user', content: 'quick' }]
      const result = await next.runAgent({ runId: `r-${randomUUID()}` })
      assert.include(JSON.stringify(result.newMessages), 'Quick answer')
    })

    test('by default abortRun only ends the request; the docs’ StoppingHttpAgent stops the run', async ({
      assert,
      cleanup,
    }) => {
      const seen = { aborted: 0 }
      const served = await serveDoors(transport, talker(seen))
      cleanup(served.close)
      // A plain HttpAgent: the run goes on (a disconnect is not a stop).
      const plainThread = `t-${randomUUID()}`
      const plain = new HttpAgent({ url: `${served.url}/agui`, headers, threadId: plainThread })
      const goingOn = await abortMidAnswer(plain)
      await sleep(200)
      assert.equal(seen.aborted, 0)
      const row = await served.db.from('agent_agui_runs').where('run_id', goingOn).first()
      const stream = await served.db
        .from('agent_streams')
        .where('run_id', row.stream_run_id)
        .first()
      assert.equal(stream.status, 'open')
      // Stopped for the test's end through the thread's stop route.
      const stopped = await fetch(`${served.url}/agui/threads/${plainThread}/stop`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{}',
      })
      assert.equal(stopped.status, 200, await stopped.text())
      assert.equal(seen.aborted, 1)

      const threadId = `t-${randomUUID()}`
      const agent = new StoppingHttpAgent({ url: `${served.url}/agui`, headers, threadId })
      const runId = await abortMidAnswer(agent)
      await waitUntil(async () => seen.aborted === 2, "the agent's signal")
      await waitUntil(
        async () => (await replayed(served.url, runId)).at(-1)?.type === 'RUN_FINISHED',
        'the end'
      )
      const events = await replayed(served.url, runId)
      assert.deepEqual(events.at(-1).outcome, { type: 'cancelled' })
      const text = events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)
      assert.equal(text.join(''), 'Hello')
    })
  })
}
