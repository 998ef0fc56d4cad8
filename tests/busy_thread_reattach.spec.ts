import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'
import { heldRunner } from './helpers/held_runner.js'
import { parseSse } from './helpers/agui.js'
import { postJson, runInput } from './helpers/http.js'
import { queued } from './helpers/busy_thread.js'

/**
 * Issue 22: a queued message's client that went away comes back by the run id it was given
 * (`GET /agui/runs/:runId`, as for any AG-UI run): its place while it waits, then the run. Another
 * person's is the 404 of a missing run.
 */

for (const transport of TRANSPORTS) {
  test.group(`Busy thread: a queued run re-attached by its id (${transport})`, () => {
    test('the client gone while queued gets RUN_STARTED, its place, then the run', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(() => held.releaseAll())
      cleanup(close)
      const threadId = `thread-${randomUUID()}`
      const first = new HttpAgent({
        url: `${url}/agui`,
        threadId,
        headers: { 'x-user': 'alice' },
        initialMessages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'hold A' }],
      }).runAgent()
      await held.started('hold A')
      // The second message is queued; its client reads the answer's head and goes away.
      const runB = `run-${randomUUID()}`
      const gone = await postJson(
        `${url}/agui`,
        runInput(threadId, runB, {
          messages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'B' }],
          forwardedProps: { multitaskStrategy: 'enqueue' },
        })
      )
      assert.equal(gone.status, 200)
      await gone.body?.cancel()
      await queued(db, threadId, 1)

      const foreign = await fetch(`${url}/agui/runs/${runB}`, { headers: { 'x-user': 'bob' } })
      assert.equal(foreign.status, 404)
      await foreign.text()
      const back = await fetch(`${url}/agui/runs/${runB}`, { headers: { 'x-user': 'alice' } })
      assert.equal(back.status, 200)
      const body = back.text()
      held.release('hold A')
      await first
      const events = parseSse(await body).map((e) => e.event as any)
      assert.deepEqual(events[0], { type: 'RUN_STARTED', threadId, runId: runB })
      assert.deepEqual(events[1], { type: 'CUSTOM', name: 'queued', value: { position: 1 } })
      const text = events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)
      assert.equal(text.join(''), 'answer to B')
      assert.equal(events.at(-1).type, 'RUN_FINISHED')
      assert.equal(events.filter((e) => e.type === 'RUN_STARTED').length, 1)
    })
  })
}
