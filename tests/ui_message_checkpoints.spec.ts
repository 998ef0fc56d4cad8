import { test } from '@japa/runner'
import fc from 'fast-check'
import { checkpointKey, TranslatorCheckpoints } from '../src/checkpoints/index.js'
import { formatCursor, parseCursor, START, type Cursor } from '../src/core/cursor.js'
import type { StreamFrame } from '../src/core/frames.js'
import { UiMessageTranslator, type UiChunk } from '../src/ui_message/translate/index.js'
import type { UiChunkItem, UiDoorDeps } from '../src/ui_message/door/reply.js'
import { turnChunks } from '../src/ui_message/door/turn.js'
import type { LucidSinkWriter } from '../src/sink/writer.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { setupRunner } from './helpers/parking.js'
import { runId } from './helpers/sink.js'

/**
 * The useChat door's resume at a cursor starts from the nearest translator checkpoint this
 * replica kept (`src/checkpoints`, the rules the AG-UI door keeps too): what it serves is exactly
 * what a translation of the whole turn from its start gives after that cursor, and a checkpoint
 * whose stored row changed is discarded, never served.
 */

type Stack = Awaited<ReturnType<typeof setupRunner>>

function depsOf(stack: Stack, checkpoints?: TranslatorCheckpoints<string>): UiDoorDeps {
  return {
    sink: stack.sink,
    driver: stack.driver,
    parking: stack.parking,
    runs: stack.door.runs,
    queue: stack.door.queue,
    options: {},
    checkpoints,
  }
}

/**
 * Every chunk of the turn from `from`, before its last segment end (the stream ended: the turn
 * ends with `finish` there).
 */
async function chunksFrom(deps: UiDoorDeps, id: string, from: Cursor) {
  const out: UiChunkItem[] = []
  for await (const item of turnChunks(deps, id, from)) out.push(item)
  return out
}

/**
 * The whole turn through one fresh translator, each stored item's chunks with its cursor: what a
 * resume after an item's cursor must serve is `start`, then the chunks of the items after it.
 */
async function fromStart(stack: Stack, id: string) {
  const translator = new UiMessageTranslator({})
  const items = []
  for await (const item of stack.sink.replay(id, { superseded: true })) items.push(item)
  const lastEnd = items.findLastIndex((item) => item.t === 'end')
  return items.map((item, i) => {
    const at = parseCursor(item.cursor)
    const chunks: UiChunk[] =
      item.t === 'end' ? translator.end(i === lastEnd) : translator.push(item as StreamFrame, at)
    return { cursor: item.cursor, chunks }
  })
}

function expectedAfter(all: Awaited<ReturnType<typeof fromStart>>, index: number, id: string) {
  const out: UiChunkItem[] = [{ event: { type: 'start', messageId: id } }]
  for (const { cursor, chunks } of all.slice(index + 1)) {
    chunks.forEach((chunk, i) =>
      out.push(i === chunks.length - 1 ? { event: chunk, id: cursor } : { event: chunk })
    )
  }
  return out
}

/** One written step of a turn. */
type Op =
  | { text: string }
  | { event: 'start' | 'delta' | 'available' | 'output'; call: number }
  | { component: number; n: number }
  | { step: 'step-start' | 'step-finish' }
  | { title: string }
  | { segmentEnd: true }

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ text: fc.constantFrom('Hello ', 'déjà vu. ', 'x', '🙂 ok') }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      event: fc.constantFrom('start', 'delta', 'available', 'output'),
      call: fc.integer({ min: 0, max: 3 }),
    }),
  },
  // Few ids: later components replace earlier ones (superseded rows).
  { weight: 2, arbitrary: fc.record({ component: fc.integer({ min: 0, max: 1 }), n: fc.nat(9) }) },
  { weight: 1, arbitrary: fc.record({ step: fc.constantFrom('step-start', 'step-finish') }) },
  { weight: 1, arbitrary: fc.record({ title: fc.constantFrom('A', 'B') }) },
  { weight: 1, arbitrary: fc.constant({ segmentEnd: true as const }) }
)

function frameOf(o: Exclude<Op, { segmentEnd: true }>): StreamFrame {
  if ('text' in o) return { t: 'text', v: o.text }
  if ('component' in o)
    return { t: 'component', name: 'card', id: `c${o.component}`, data: { n: o.n } }
  if ('step' in o) return { t: 'event', event: { kind: o.step } }
  if ('title' in o) return { t: 'event', event: { kind: 'title', title: o.title } }
  const id = `call_${o.call}`
  switch (o.event) {
    case 'start':
      return {
        t: 'event',
        event: { kind: 'tool-input-start', id, name: 'search', toolKind: 'read' },
      }
    case 'delta':
      return { t: 'event', event: { kind: 'tool-input-delta', id, delta: '{"q":' } }
    case 'available':
      return {
        t: 'event',
        event: { kind: 'tool-input-available', id, name: 'search', input: {}, toolKind: 'read' },
      }
    case 'output':
      return { t: 'event', event: { kind: 'tool-output', id, output: { ok: o.call } } }
  }
}

/** Write the ops as a turn (each frame its own commit), ended: segment ends reopen the stream. */
async function writeTurn(stack: Stack, id: string, ops: Op[]) {
  let writer: LucidSinkWriter = await stack.sink.open(id)
  for (const o of ops) {
    if ('segmentEnd' in o) {
      await writer.end()
      writer = await stack.sink.open(id)
      continue
    }
    await writer.write(frameOf(o))
    await writer.flush()
  }
  await writer.end()
}

test.group('useChat door: a resume at a cursor starts from the nearest checkpoint', () => {
  test('every cursor of a long turn: the chunks a translation from the start gives after it', async ({
    assert,
  }) => {
    const stack = await setupRunner(scriptedAgent())
    // Count where the replays start: a resume from a checkpoint reads from its row, not row 1.
    const starts: (Cursor | undefined)[] = []
    const replay = stack.sink.replay.bind(stack.sink)
    stack.sink.replay = (id, options = {}) => {
      starts.push(options.after as Cursor | undefined)
      return replay(id, options)
    }
    let fromCheckpoints = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 20, maxLength: 45 }),
        fc.integer({ min: 1, max: 4 }),
        fc.infiniteStream(fc.nat()),
        async (ops, every, picks) => {
          const id = runId('uc-ckpt')
          await writeTurn(stack, id, ops)
          const all = await fromStart(stack, id)
          const checkpoints = new TranslatorCheckpoints<string>(every)
          const warm = depsOf(stack, checkpoints)
          const cold = depsOf(stack)
          // The whole turn served first (it leaves checkpoints), then resumes in a random order.
          const whole = await chunksFrom(warm, id, START)
          assert.deepEqual(whole, expectedAfter(all, -1, id))
          // Every item's cursor but the turn's end (a reader there waits for the stream to go on).
          const order = all.slice(0, -1).map((_, i) => i)
          for (let i = order.length - 1; i > 0; i--) {
            const j = picks.next().value % (i + 1)
            ;[order[i], order[j]] = [order[j], order[i]]
          }
          for (const index of order) {
            const cursor = parseCursor(all[index].cursor)
            starts.length = 0
            const got = await chunksFrom(warm, id, cursor)
            assert.deepEqual(got, expectedAfter(all, index, id), all[index].cursor)
            if (starts[0] !== undefined) fromCheckpoints++
            // Inside a text row: the same as a door that kept nothing.
            if (cursor.offset !== undefined && cursor.offset > 1) {
              const inside = { seq: cursor.seq, offset: cursor.offset - 1 }
              assert.deepEqual(
                await chunksFrom(warm, id, inside),
                await chunksFrom(cold, id, inside),
                formatCursor(inside)
              )
            }
          }
        }
      ),
      { numRuns: 8 }
    )
    assert.isAbove(fromCheckpoints, 0)
  }).timeout(180_000)

  test('a checkpoint whose stored row changed is discarded, never served', async ({ assert }) => {
    const stack = await setupRunner(scriptedAgent())
    const id = runId('uc-mismatch')
    const ops: Op[] = []
    for (let i = 0; i < 4; i++) {
      ops.push(
        { text: `word ${i}. ` },
        { event: 'available', call: i },
        { event: 'output', call: i }
      )
    }
    await writeTurn(stack, id, ops)
    const stream = await stack.sink.head(id)
    const checkpoints = new TranslatorCheckpoints<string>(2)
    const deps = depsOf(stack, checkpoints)
    const key = checkpointKey(id, stream!.createdAt, {})
    // A replay to the end leaves checkpoints after whole rows; find one after a tool call's input.
    await chunksFrom(deps, id, { seq: stream!.lastSeq - 1 })
    const seq = [2, 5, 8].find((s) => checkpoints.nearest(key, s)?.seq === s)
    assert.isDefined(seq)
    const kept = checkpoints.nearest(key, seq!)!
    // That row is another call now (same stream, same incarnation): call_N has no part any more,
    // so its output (the next row) is not sent, which the kept state would have sent.
    await stack.db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('seq', seq!)
      .update({
        body: JSON.stringify({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: 'call_x',
            name: 'other',
            input: {},
            toolKind: 'read',
          },
        }),
      })
    const warm = await chunksFrom(deps, id, { seq: seq! })
    const cold = await chunksFrom(depsOf(stack), id, { seq: seq! })
    assert.deepEqual(warm, cold)
    assert.equal(warm[0].event.type, 'start')
    assert.notEqual(warm[1].event.type, 'tool-output-available')
    const now = checkpoints.nearest(key, seq!)
    assert.isTrue(now === null || now.row !== kept.row)
  })
})
