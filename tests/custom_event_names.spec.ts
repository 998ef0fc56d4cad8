import { test } from '@japa/runner'
import type { StreamFrame } from '../src/core/frames.js'
import { FrameTranslator, RUN_STATE_EVENT } from '../src/agui/translate/index.js'
import { UiMessageTranslator } from '../src/ui_message/translate/translator.js'

/**
 * A `custom` event (`{ kind: 'custom', name, value }`) never goes out under a name the doors use
 * themselves, even when the app lists it in `customEvents`: AG-UI's `agent_stream.*` CUSTOM
 * events (the door's projection of the run) and `queued`, the useChat door's `data-state`
 * (the agent's state), `data-subagent` and `data-queued` parts, and the kinds `custom`
 * allow-lists (the same CUSTOM name / data part). A runner (or a remote agent it mirrors)
 * cannot pass its value off as the package's.
 */

const custom = (name: string, value: unknown): StreamFrame =>
  ({ t: 'event', event: { kind: 'custom', name, value } }) as StreamFrame

const RESERVED = [RUN_STATE_EVENT, 'agent_stream.other', 'queued', 'state', 'subagent', 'progress']

test.group('Custom event names the package uses itself', () => {
  test('AG-UI: none is sent as a CUSTOM event, listed or not; other listed names are', ({
    assert,
  }) => {
    const translator = new FrameTranslator({
      streamRunId: 'run-1',
      customEvents: [...RESERVED, 'PredictState'],
      custom: { progress: ['percent'] },
    })
    const events = [...RESERVED, 'PredictState'].flatMap((name, i) =>
      translator.push(custom(name, { spoof: true }), { seq: i + 1 })
    )
    assert.deepEqual(
      events.map((e: any) => [e.type, e.name, e.value]),
      [['CUSTOM', 'PredictState', { spoof: true }]]
    )
  })

  test('useChat: none is sent as a data part, listed or not; other listed names are', ({
    assert,
  }) => {
    const translator = new UiMessageTranslator({
      customEvents: [...RESERVED, 'PredictState'],
      custom: { progress: ['percent'] },
    })
    const chunks = [...RESERVED, 'PredictState'].flatMap((name, i) =>
      translator.push(custom(name, [1]), { seq: i + 1 })
    )
    assert.deepEqual(
      chunks.filter((c: any) => c.type.startsWith('data-')),
      [{ type: 'data-PredictState', data: [1] }] as any
    )
  })
})
