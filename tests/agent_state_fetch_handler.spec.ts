import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import type { StreamFrame } from '../src/core/frames.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { parseSse } from './helpers/agui.js'
import { runInput } from './helpers/http.js'

/**
 * Shared state both ways through the Fetch-API handlers (no AdonisJS): the page's state reaches
 * the runner as `ctx.input.state` and the agent's state streams back, on both doors; a page state
 * that is not an object or is over `maxStateBytes` is refused before anything is written.
 */

const state = (fields: Record<string, unknown>) =>
  ({ t: 'event', event: { kind: 'state', ...fields } }) as StreamFrame

function stateAgent() {
  const inputs: any[] = []
  const runner: AgentRunner = {
    async start(ctx: RunContext) {
      const input = ctx.input as { state?: Record<string, unknown> }
      inputs.push(input)
      await ctx.writer.write(state({ snapshot: { ...input.state, steps: [] } }))
      await ctx.writer.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'one' }] }))
      await ctx.writer.write({ t: 'text', v: 'Done.' })
      return { status: 'finished' }
    },
    async resume() {
      return { status: 'finished' }
    },
  }
  return { runner, inputs }
}

async function serveBoth() {
  const agent = stateAgent()
  const served = await serveRuntime(
    { runner: agent.runner, maxStateBytes: 64 },
    (runtime, principal) => {
      const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
      const chat = createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/ai', principal })
      return (request) =>
        new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
    }
  )
  return { ...served, inputs: agent.inputs }
}

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify(body),
  })

const storedRuns = async (db: Awaited<ReturnType<typeof serveBoth>>['db']) =>
  Number((await db.from('agent_streams').count('* as n').first()).n)

test.group('Agent state through the Fetch-API handlers (AG-UI and useChat)', () => {
  test('AG-UI: RunAgentInput.state reaches the runner; the agent state streams back', async ({
    assert,
    cleanup,
  }) => {
    const { url, inputs, close } = await serveBoth()
    cleanup(close)
    const answer = await post(
      `${url}/agui`,
      runInput(`thread-${randomUUID()}`, randomUUID(), { state: { recipe: 'soup' } })
    )
    assert.equal(answer.status, 200)
    const events = parseSse(await answer.text()).map((item) => item.event)
    assert.deepEqual(inputs[0].state, { recipe: 'soup' })
    assert.deepEqual(
      events.filter((e) => e.type.startsWith('STATE_')).map((e) => e.snapshot ?? e.delta),
      [{ recipe: 'soup', steps: [] }, [{ op: 'add', path: '/steps/-', value: 'one' }]]
    )
  })

  test('useChat: the body state reaches the runner; the agent state is the data-state part', async ({
    assert,
    cleanup,
  }) => {
    const { url, inputs, close } = await serveBoth()
    cleanup(close)
    const answer = await post(`${url}/ai/chat`, {
      id: `chat-${randomUUID()}`,
      messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'Cook' }] }],
      trigger: 'submit-message',
      state: { recipe: 'soup' },
    })
    assert.equal(answer.status, 200)
    const parts = (await answer.text())
      .split('\n\n')
      .filter((block) => block.includes('"data-state"'))
      .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6)).data)
    assert.deepEqual(inputs[0].state, { recipe: 'soup' })
    assert.deepEqual(parts, [
      { recipe: 'soup', steps: [] },
      { recipe: 'soup', steps: ['one'] },
    ])
  })

  test('a page state that is not an object, or over maxStateBytes, is 400 on both doors, nothing written', async ({
    assert,
    cleanup,
  }) => {
    const { url, inputs, db, close } = await serveBoth()
    cleanup(close)
    for (const [bad, rule] of [
      [[1, 2], 'object'],
      ['text', 'object'],
      [{ big: 'x'.repeat(100) }, 'maxBytes'],
    ] as const) {
      const answers = [
        await post(`${url}/agui`, runInput(`thread-${randomUUID()}`, randomUUID(), { state: bad })),
        await post(`${url}/ai/chat`, {
          id: `chat-${randomUUID()}`,
          messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'Cook' }] }],
          state: bad,
        }),
      ]
      for (const answer of answers) {
        const text = await answer.text()
        assert.equal(answer.status, 400)
        const json = JSON.parse(text)
        assert.equal(json.code, 'invalid_input')
        assert.include(json.message, 'state')
        assert.include(json.message, rule)
        assert.notInclude(text, 'xxxxxxxx')
      }
    }
    assert.lengthOf(inputs, 0)
    assert.equal(await storedRuns(db), 0)
  })
})
