import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import type { AgentRunner } from '../src/runner/contract.js'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'
import { tableNames } from '../src/store/schema.js'
import { sleep, waitUntil } from './helpers/sink.js'
import { queued } from './helpers/busy_thread.js'
import { askApproval } from './helpers/parking.js'

/**
 * Issue 22: a message queued behind a run that then parks waits while the run is parked, and
 * starts as soon as the parked run ends by a stop (or the console's cancel): the cancel tells the
 * queue, the sweeper's next round is not waited for (the Fetch transport runs no sweeper here).
 */

const tables = tableNames()

/** `park`: says a word, waits for the test, then asks approval and parks; else answers. */
function parkingRunner(gate: Promise<void>): AgentRunner {
  return {
    async start(ctx) {
      const message = String((ctx.input as { message?: unknown }).message)
      await ctx.writer.write({ t: 'text', v: `answer to ${message}` })
      if (message !== 'park') return { status: 'finished' }
      await ctx.writer.flush?.()
      await gate
      return askApproval(ctx)
    },
    resume: async () => ({ status: 'finished' }),
  }
}

const agentOn = (url: string, threadId: string, content: string) =>
  new HttpAgent({
    url: `${url}/agui`,
    threadId,
    headers: { 'x-user': 'alice' },
    initialMessages: [{ id: `u-${randomUUID()}`, role: 'user', content }],
  })

for (const transport of TRANSPORTS) {
  test.group(`Busy thread: a queue behind a parked run (${transport})`, () => {
    test('the queued message waits while the run is parked, and starts once a stop ends it', async ({
      assert,
      cleanup,
    }) => {
      let open!: () => void
      const gate = new Promise<void>((resolve) => (open = resolve))
      cleanup(() => open())
      const { url, db, close } = await serveDoors(transport, parkingRunner(gate))
      cleanup(close)
      const threadId = `thread-${randomUUID()}`
      const first = agentOn(url, threadId, 'park').runAgent()
      await waitUntil(
        async () => !!(await db.connection().from(tables.frames).where('kind', 'text').first()),
        'the first run talking'
      )
      const second = agentOn(url, threadId, 'B').runAgent({
        forwardedProps: { multitaskStrategy: 'enqueue' },
      })
      await queued(db, threadId, 1)
      open()
      await first
      await waitUntil(
        async () =>
          !!(await db.connection().from(tables.suspensions).where('status', 'parked').first()),
        'the run parked'
      )
      // Parked: the queued message still waits.
      await sleep(100)
      await queued(db, threadId, 1)

      const stopped = await fetch(`${url}/agui/threads/${threadId}/stop`, {
        method: 'POST',
        headers: { 'x-user': 'alice', 'content-type': 'application/json' },
        body: '{}',
      })
      assert.equal(stopped.status, 200, await stopped.text())
      const result = await second
      const said = result.newMessages
        .filter((m) => m.role === 'assistant')
        .map((m) => m.content)
        .join('')
      assert.equal(said, 'answer to B')
      await queued(db, threadId, 0)
    })
  })
}
