import { test } from '@japa/runner'
import { InvalidFrameError } from '../src/errors.js'
import type { StreamFrame } from '../src/core/frames.js'
import { collect, countRows, runId, setupSink } from './helpers/sink.js'
import { MAX_JSON_DEPTH } from '../src/core/json_depth.js'
import { validateAgUiInput } from '../src/agui/door/input.js'
import { validateChatInput } from '../src/ui_message/door/input.js'

/**
 * The agent's state frame (`{ kind: 'state', snapshot | delta }`, src/core/agent_state.ts):
 * checked when written, against the state the stream's frames left; a refusal stores nothing.
 */

const state = (fields: Record<string, unknown>) =>
  ({ t: 'event', event: { kind: 'state', ...fields } }) as StreamFrame

async function refused(assert: any, write: Promise<unknown>, rule: string) {
  try {
    await write
  } catch (error) {
    assert.instanceOf(error, InvalidFrameError)
    assert.deepEqual((error as InvalidFrameError).issues, [{ field: 'event', rule }])
    assert.equal((error as any).code, 'E_INVALID_FRAME')
    return (error as Error).message
  }
  assert.fail(`expected a refusal (${rule})`)
}

test.group('Agent state frames: checked when written', () => {
  test('a snapshot, then deltas that apply, are stored as written', async ({ assert }) => {
    const { sink } = await setupSink()
    const id = runId('state')
    const writer = await sink.open(id)
    await writer.write(state({ snapshot: { steps: [] } }))
    await writer.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'a' }] }))
    await writer.write(state({ delta: [{ op: 'test', path: '/steps/0', value: 'a' }] }))
    await writer.end()
    const frames = await collect(sink.subscribe(id))
    assert.deepEqual(
      frames.map((f: any) => f.event),
      [
        { kind: 'state', snapshot: { steps: [] } },
        { kind: 'state', delta: [{ op: 'add', path: '/steps/-', value: 'a' }] },
        { kind: 'state', delta: [{ op: 'test', path: '/steps/0', value: 'a' }] },
      ]
    )
  })

  test('refused, nothing stored: not an object, both or neither, not JSON Patch, does not apply, over the cap', async ({
    assert,
  }) => {
    const { db, sink } = await setupSink({ maxStateBytes: 64 })
    const id = runId('state')
    const writer = await sink.open(id)
    // A delta before any snapshot applies to nothing.
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'add', path: '/a', value: 1 }] })),
      'statePatchApplies'
    )
    await refused(assert, writer.write(state({ snapshot: [1, 2] })), 'stateObject')
    await refused(assert, writer.write(state({ snapshot: null })), 'stateSnapshotOrDelta')
    await refused(assert, writer.write(state({})), 'stateSnapshotOrDelta')
    await refused(assert, writer.write(state({ snapshot: {}, delta: [] })), 'stateSnapshotOrDelta')
    await refused(assert, writer.write(state({ delta: { op: 'add' } })), 'jsonPatch')
    await refused(assert, writer.write(state({ delta: [{ op: 'move', path: '/a' }] })), 'jsonPatch')
    await refused(
      assert,
      writer.write(state({ snapshot: { big: 'x'.repeat(100) } })),
      'maxStateBytes'
    )
    await writer.write(state({ snapshot: { a: 1, list: [] } }))
    const message = await refused(
      assert,
      writer.write(state({ delta: [{ op: 'replace', path: '/missing/deep', value: 'secret-v' }] })),
      'statePatchApplies'
    )
    assert.notInclude(message, 'secret-v')
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'test', path: '/a', value: 2 }] })),
      'statePatchApplies'
    )
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'add', path: '/__proto__/x', value: 1 }] })),
      'statePatchApplies'
    )
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'replace', path: '', value: [1] }] })),
      'stateObject'
    )
    // A delta that would take the state over the cap.
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'add', path: '/list/-', value: 'y'.repeat(80) }] })),
      'maxStateBytes'
    )
    // The refusals changed nothing: this delta applies to the snapshot as it was stored.
    await writer.write(state({ delta: [{ op: 'test', path: '/list', value: [] }] }))
    await writer.end()
    assert.equal(await countRows(db, 'agent_stream_frames', id), 3)
  })

  test('a writer that reopens the stream (a resume) checks deltas against the stored state', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state')
    const first = await sink.open(id)
    await first.write(state({ snapshot: { n: 1, items: ['a'] } }))
    await first.write(state({ delta: [{ op: 'replace', path: '/n', value: 2 }] }))
    await first.write({ t: 'text', v: 'between' })
    await first.end()
    const second = await sink.open(id)
    await refused(
      assert,
      second.write(state({ delta: [{ op: 'test', path: '/n', value: 1 }] })),
      'statePatchApplies'
    )
    await second.write(state({ delta: [{ op: 'test', path: '/n', value: 2 }] }))
    await second.write(state({ delta: [{ op: 'add', path: '/items/-', value: 'b' }] }))
    await second.end()
    // And the next one sees what the second wrote.
    const third = await sink.open(id)
    await third.write(state({ delta: [{ op: 'test', path: '/items', value: ['a', 'b'] }] }))
    await third.end()
    const frames = await collect(sink.subscribe(id))
    assert.lengthOf(
      frames.filter((f: any) => f.t === 'event' && f.event.kind === 'state'),
      5
    )
  })

  test('a state nested deeper than the page can send back is refused (maxDepth), nothing stored', async ({
    assert,
  }) => {
    // The page sends the agent's state back in its next request (`RunAgentInput.state`, useChat's
    // body `state`), one level below the body, which the depth rule bounds: a state nested one
    // level less than MAX_JSON_DEPTH is the deepest that can come back.
    const nested = (levels: number) => {
      let value: Record<string, unknown> = { leaf: true }
      for (let i = 1; i < levels; i++) value = { a: value }
      return value
    }
    const deepest = nested(MAX_JSON_DEPTH - 1)
    await validateAgUiInput({
      threadId: 't',
      runId: 'r',
      messages: [{ id: 'm', role: 'user', content: 'hi' }],
      tools: [],
      context: [],
      state: deepest,
    })
    await validateChatInput({
      id: 'c',
      messages: [{ id: 'm', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
      state: deepest,
    })
    const { db, sink } = await setupSink()
    const id = runId('state')
    const writer = await sink.open(id)
    await refused(assert, writer.write(state({ snapshot: nested(MAX_JSON_DEPTH) })), 'maxDepth')
    await writer.write(state({ snapshot: deepest }))
    // A delta that nests the state one level deeper.
    const path = '/a'.repeat(MAX_JSON_DEPTH - 2) + '/leaf'
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'replace', path, value: { deeper: true } }] })),
      'maxDepth'
    )
    await writer.write(state({ delta: [{ op: 'replace', path, value: 'flat' }] }))
    await writer.end()
    // The snapshot, the flat delta and the end.
    assert.equal(await countRows(db, 'agent_stream_frames', id), 3)
  })

  test('the state is checked as written: a runner changing its snapshot object after the write changes nothing', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state')
    const writer = await sink.open(id)
    // A runner's own object, written, then changed in place for its own use (not written).
    const doc: { items: string[] } = { items: [] }
    await writer.write(state({ snapshot: doc }))
    doc.items.push('unwritten')
    // The state as written and as every reader holds it: no item.
    await writer.write(state({ delta: [{ op: 'test', path: '/items', value: [] }] }))
    await writer.write(state({ delta: [{ op: 'add', path: '/items/-', value: 'a' }] }))
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'remove', path: '/items/1' }] })),
      'statePatchApplies'
    )
    // The same with a delta's value.
    const item = { tags: [] as string[] }
    await writer.write(state({ delta: [{ op: 'add', path: '/item', value: item }] }))
    item.tags.push('unwritten')
    await writer.write(state({ delta: [{ op: 'test', path: '/item/tags', value: [] }] }))
    await writer.end()
    const events = (await collect(sink.subscribe(id))).filter((f: any) => f.t === 'event') as any[]
    assert.deepEqual(events.at(0).event.snapshot, { items: [] })
    assert.lengthOf(events, 5)
  })

  test('a state frame is stored as it was when written, awaited or not', async ({ assert }) => {
    const { sink } = await setupSink()
    const id = runId('state')
    const writer = await sink.open(id)
    const doc: { items: string[] } = { items: [] }
    // Not awaited (a runner writing on): the object changes before the frame is committed.
    const written = writer.write(state({ snapshot: doc }))
    doc.items.push('unwritten')
    const delta = [{ op: 'add', path: '/items/-', value: 'a' }]
    const next = writer.write(state({ delta }))
    delta[0].value = 'unwritten'
    await Promise.all([written, next])
    await writer.write(state({ delta: [{ op: 'test', path: '/items', value: ['a'] }] }))
    await writer.end()
    const events = (await collect(sink.subscribe(id))).filter((f: any) => f.t === 'event')
    assert.deepEqual(
      events.map((f: any) => f.event),
      [
        { kind: 'state', snapshot: { items: [] } },
        { kind: 'state', delta: [{ op: 'add', path: '/items/-', value: 'a' }] },
        { kind: 'state', delta: [{ op: 'test', path: '/items', value: ['a'] }] },
      ]
    )
  })
})
