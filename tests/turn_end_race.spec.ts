import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import type { AgentRunner } from '../src/runner/contract.js'
import { serveApp } from './helpers/http.js'
import { resetTables } from './helpers/db.js'
import { headlessChat } from './helpers/ui_chat.js'

/**
 * A client answers the end of a run with its next message at once: the run's end it was shown
 * (`RUN_ERROR`, a cancelled `RUN_FINISHED`, useChat's `error` chunk) commits with the stream's
 * end, so the thread is free by then (never 409 `thread_busy` under the default `reject`).
 * Twenty rounds each: before the end and its last frame were one commit, a reader could get the
 * frame between the two and the client's next message raced the end.
 */

/** Fails every run it starts after a word (`failed`), or ends it `cancelled`. */
const ending = (status: 'failed' | 'cancelled'): AgentRunner => ({
  async start(ctx) {
    await ctx.writer.write({ t: 'text', v: 'Working. ' })
    return { status }
  },
  async resume() {
    return { status: 'finished' }
  },
})

for (const status of ['failed', 'cancelled'] as const) {
  test.group(`A run ended ${status}: the next message at once finds the thread free`, () => {
    test('AG-UI door, HttpAgent', async ({ assert }) => {
      const { url, app } = await serveApp({ runner: ending(status) })
      await resetTables(await app.container.make('lucid.db'))
      const client = new HttpAgent({
        url: `${url}/agui`,
        threadId: `thread-${randomUUID()}`,
        headers: { 'x-user': 'alice' },
      })
      const refusals: string[] = []
      for (let round = 0; round < 20; round++) {
        client.addMessage({ id: `u${round}`, role: 'user', content: `Try ${round}` })
        await client.runAgent().catch((error: { payload?: { code?: string } }) => {
          if (error.payload?.code) refusals.push(error.payload.code)
        })
      }
      assert.deepEqual(refusals, [])
    }).timeout(60_000)

    test('useChat door, DefaultChatTransport', async ({ assert }) => {
      const { url, app } = await serveApp({ runner: ending(status) })
      await resetTables(await app.container.make('lucid.db'))
      const chat = headlessChat(url, `chat-${randomUUID()}`)
      const refusals: string[] = []
      for (let round = 0; round < 20; round++) {
        await chat.send(`Try ${round}`).catch((error: Error) => {
          if (/thread_busy|409/.test(error.message)) refusals.push(error.message)
        })
      }
      assert.deepEqual(refusals, [])
    }).timeout(60_000)
  })
}
