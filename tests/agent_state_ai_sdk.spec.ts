import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { jsonSchema, tool } from 'ai'
import { aiSdkAgent, type SharedState } from '../src/runners/ai_sdk/index.js'
import { resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse } from './helpers/agui.js'
import { finish, scriptedModel, text, toolCall } from './helpers/ai_sdk.js'

test.group('AI SDK runner | shared state through the tools context', () => {
  test("a tool reads the page's state and writes the agent's: STATE_SNAPSHOT, STATE_DELTA", async ({
    assert,
  }) => {
    const model = scriptedModel([
      [...toolCall('c1', 'plan', { step: 'chop' }), ...finish('tool-calls')],
      [...text('Planned.'), ...finish()],
    ])
    const seen: unknown[] = []
    const refusals: string[] = []
    const plan = tool({
      description: 'Add a step to the plan',
      inputSchema: jsonSchema<{ step: string }>({
        type: 'object',
        properties: { step: { type: 'string' } },
      }),
      execute: async (input, { context }) => {
        const state = (context as { state: SharedState }).state
        seen.push(state.page)
        // A delta before any snapshot does not apply: refused, nothing stored.
        await state.patch([{ op: 'add', path: '/steps/-', value: 'x' }]).catch((error) => {
          refusals.push(error.code)
        })
        await state.set({ ...state.page, steps: [] })
        await state.patch([{ op: 'add', path: '/steps/-', value: input.step }])
        return 'planned'
      },
    })
    const served = await serveApp({
      runner: aiSdkAgent({
        model,
        tools: { plan },
        toolsContextOf: (state) => ({ plan: { state } }),
      }),
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const response = await postJson(
      `${served.url}/agui`,
      runInput(`t-${randomUUID()}`, randomUUID(), { state: { dish: 'soup' } })
    )
    const events = parseSse(await response.text()).map((item) => item.event)
    await assertConforms(assert, events)
    assert.deepEqual(seen, [{ dish: 'soup' }])
    assert.deepEqual(refusals, ['E_INVALID_FRAME'])
    const state = events.filter((e) => e.type.startsWith('STATE_'))
    assert.deepEqual(state, [
      { type: 'STATE_SNAPSHOT', snapshot: { dish: 'soup', steps: [] } },
      { type: 'STATE_DELTA', delta: [{ op: 'add', path: '/steps/-', value: 'chop' }] },
    ])
    assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
  })
})
