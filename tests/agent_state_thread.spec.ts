import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import fastJsonPatch from 'fast-json-patch'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import type { StreamFrame } from '../src/core/frames.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { assertConforms, parseSse, recordingFetch, type WireEvent } from './helpers/agui.js'

/**
 * The agent's state across a thread's runs: a client restoring the thread (a re-attach by
 * thread, no cursor: a reloaded page) gets the state a client that never left holds, also when
 * the thread's newest run wrote no state of its own (the state an earlier run left stands).
 */

const state = (fields: Record<string, unknown>) =>
  ({ t: 'event', event: { kind: 'state', ...fields } }) as StreamFrame

/** Writes a recipe on "Cook", a new snapshot on "Again", only text otherwise. */
const runner: AgentRunner = {
  async start(ctx: RunContext) {
    const { message } = ctx.input as { message: string | null }
    if (message === 'Cook') {
      await ctx.writer.write(state({ snapshot: { recipe: 'soup', steps: [] } }))
      await ctx.writer.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'boil' }] }))
    }
    if (message === 'Again') await ctx.writer.write(state({ snapshot: { recipe: 'stew' } }))
    await ctx.writer.write({ t: 'text', v: `Said: ${message}.` })
    return { status: 'finished' }
  },
  async resume() {
    return { status: 'finished' }
  },
}

/** The state a client holds after `events`, from `{}`: snapshots replace, deltas patch. */
function applied(events: WireEvent[]) {
  let held: unknown = {}
  for (const event of events) {
    if (event.type === 'STATE_SNAPSHOT') held = structuredClone(event.snapshot)
    if (event.type === 'STATE_DELTA') {
      held = fastJsonPatch.applyPatch(held, event.delta, true, false).newDocument
    }
  }
  return held
}

async function conversation(said: string[]) {
  const served = await serveApp({ runner })
  await resetTables(await served.app.container.make('lucid.db'))
  const recorder = recordingFetch()
  const threadId = `thread-${randomUUID()}`
  const client = new HttpAgent({
    url: `${served.url}/agui`,
    threadId,
    headers: { 'x-user': 'alice' },
    fetch: recorder.fetch,
  })
  for (const [i, text] of said.entries()) {
    client.messages.push({ id: `u${i}`, role: 'user', content: text } as any)
    await client.runAgent()
  }
  const again = await fetch(`${served.url}/agui/threads/${threadId}`, {
    headers: { 'x-user': 'alice' },
  })
  const restored = parseSse(await again.text()).map((item) => item.event)
  return { client, restored }
}

test.group('Agent state across a thread (AG-UI re-attach by thread)', () => {
  test("the newest run wrote no state: the restored thread holds the earlier run's", async ({
    assert,
  }) => {
    const { client, restored } = await conversation(['Cook', 'Thanks'])
    assert.deepEqual(client.state, { recipe: 'soup', steps: ['boil'] })
    await assertConforms(assert, restored)
    assert.deepEqual(applied(restored), client.state)
  })

  test('the newest run wrote its own: the restored thread holds that one', async ({ assert }) => {
    const { client, restored } = await conversation(['Cook', 'Again'])
    assert.deepEqual(client.state, { recipe: 'stew' })
    await assertConforms(assert, restored)
    assert.deepEqual(applied(restored), client.state)
  })

  test('no run wrote any: no STATE_SNAPSHOT (the page keeps its own)', async ({ assert }) => {
    const { restored } = await conversation(['Hello', 'Thanks'])
    await assertConforms(assert, restored)
    assert.notInclude(
      restored.map((e) => e.type),
      'STATE_SNAPSHOT'
    )
  })
})
