import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'
import { assertConforms, parseSse } from './helpers/agui.js'
import { snapshot } from './helpers/parking.js'

/** Parks on one approval, every time at the same stream positions (no timing in it). */
const approver: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'tool-input-available', id: 'c1', name: 'pay', input: {}, toolKind: 'action' },
    })
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'c1',
      toolName: 'pay',
      input: {},
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume(ctx) {
    await ctx.writer.write({ t: 'event', event: { kind: 'tool-output', id: 'c1', output: 'paid' } })
    return { status: 'finished' }
  },
}

test.group('AG-UI: ids the server mints cannot be claimed by a client (issue 10, item 14)', () => {
  test("another principal cannot take a continuation's run id before the server mints it", async ({
    assert,
  }) => {
    const { url, app, agentStream } = await serveApp({ runner: approver })
    const db = await app.container.make('lucid.db')
    const threadId = `t-${randomUUID()}`
    const runId = `r-${randomUUID()}`
    /** Park, approve elsewhere, attach by thread: the continuation's run id. */
    const scenario = async (before?: () => Promise<void>) => {
      await resetTables(db)
      const parked = await postJson(`${url}/agui`, {
        threadId,
        runId,
        messages: [{ id: 'u', role: 'user', content: 'go' }],
      })
      await parked.text()
      await agentStream.driver.settled()
      await before?.()
      const approve = await postJson(`${url}/items/${runId}/c1/approve`, {})
      assert.equal(approve.status, 200)
      await agentStream.driver.settled()
      const attached = await fetch(`${url}/agui/threads/${threadId}`, {
        headers: { 'x-user': 'alice' },
      })
      assert.equal(attached.status, 200, 'the owner lost the thread')
      const events = parseSse(await attached.text()).map((item) => item.event)
      await assertConforms(assert, events)
      assert.deepEqual(events.at(-1)!.outcome, { type: 'success' })
      return events[0].runId as string
    }
    // What the server mints is knowable (derived): learn it once...
    const minted = await scenario()
    assert.notEqual(minted, runId)
    // ...then, the same run again, mallory tries to take it first on every route.
    const again = await scenario(async () => {
      const before = await snapshot(db)
      const agui = await postJson(
        `${url}/agui`,
        {
          threadId: `m-${randomUUID()}`,
          runId: minted,
          messages: [{ id: 'u', role: 'user', content: 'x' }],
        },
        'mallory'
      )
      assert.equal(agui.status, 400)
      const refused = (await agui.json()) as { code: string; message: string }
      assert.equal(refused.code, 'invalid_input')
      assert.include(refused.message, 'notReserved')
      const native = await postJson(`${url}/runs`, { message: 'x', runId: minted }, 'mallory')
      assert.equal(native.status, 422)
      assert.equal(await snapshot(db), before)
    })
    assert.equal(again, minted)
  })
})
