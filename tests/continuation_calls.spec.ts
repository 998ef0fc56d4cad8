import { test } from '@japa/runner'
import { tool, jsonSchema } from 'ai'
import type { StreamFrame } from '../src/core/frames.js'
import {
  callsAtTakeover,
  executionStartFrame,
  NOT_RUN_TOOL_ERROR,
} from '../src/runners/ai_sdk/continuation.js'
import { INTERRUPTED_TOOL_ERROR } from '../src/runner/contract.js'

const tools = {
  send: tool({
    inputSchema: jsonSchema<{ to: string }>({ type: 'object' }),
    execute: async () => 'sent',
  }),
}
const event = (value: Record<string, unknown>) => ({ t: 'event', event: value }) as StreamFrame
const call = (id: string) =>
  event({ kind: 'tool-input-available', id, name: 'send', input: {}, toolKind: 'action' })
const output = (id: string) => event({ kind: 'tool-output', id, output: 'sent' })
const approval = (id: string) =>
  ({ t: 'approval', runId: 'r1', id, toolName: 'send', input: {} }) as unknown as StreamFrame
/** An earlier segment that called `c1` to the end: asked, started, answered. */
const earlier = [call('c1'), approval('c1'), executionStartFrame('c1', 'send', {}), output('c1')]

test.group('Where a dead segment calls stood, with a call id a provider reuses', () => {
  test('a reused id started in the dead segment is interrupted, never taken as answered', ({
    assert,
  }) => {
    const frames = [...earlier, call('c1'), executionStartFrame('c1', 'send', {})]
    const calls = callsAtTakeover(frames, tools, new Set())
    assert.deepEqual(calls.interrupted, [{ id: 'c1', error: INTERRUPTED_TOOL_ERROR }])
    assert.deepEqual(calls.waiting, [])
  })

  test('a reused id emitted but not started did not run; one asked again waits', ({ assert }) => {
    const notStarted = callsAtTakeover([...earlier, call('c1')], tools, new Set())
    assert.deepEqual(notStarted.interrupted, [{ id: 'c1', error: NOT_RUN_TOOL_ERROR }])
    const askedAgain = callsAtTakeover([...earlier, call('c1'), approval('c1')], tools, new Set())
    assert.deepEqual(askedAgain.interrupted, [])
    assert.deepEqual(askedAgain.waiting, ['c1'])
  })

  test('an id answered in its own segment stays answered', ({ assert }) => {
    const calls = callsAtTakeover(earlier, tools, new Set())
    assert.deepEqual(calls.interrupted, [])
    assert.deepEqual(calls.waiting, [])
  })
})
