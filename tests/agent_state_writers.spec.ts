import { test } from '@japa/runner'
import { InvalidFrameError, StreamClosedError } from '../src/errors.js'
import type { StreamFrame } from '../src/core/frames.js'
import { applyStateEvent, type AgentState } from '../src/core/agent_state.js'
import { sinkInternals, type LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { collect, countRows, runId, setupSink, sleep } from './helpers/sink.js'
import { DIALECT } from './helpers/db.js'

/**
 * The agent's state on every write path (src/sink/agent_state_check.ts): a `state` frame is
 * checked against the state the stream's STORED frames leave when it commits, under the stream
 * row's lock, whoever writes it: a writer, another writer of the same stream (a delegated
 * child, a reopen, another replica, a takeover), `sink.append`; a commit retried (by its
 * writer after a transient error, or by its caller after a failed `end`) is applied once.
 * Readers skip a stored delta that does not apply: none may be stored.
 */

const state = (fields: Record<string, unknown>) =>
  ({ t: 'event', event: { kind: 'state', ...fields } }) as StreamFrame

async function refused(assert: any, write: Promise<unknown>, rule: string) {
  try {
    await write
  } catch (error) {
    assert.instanceOf(error, InvalidFrameError)
    assert.deepEqual((error as InvalidFrameError).issues, [{ field: 'event', rule }])
    return
  }
  assert.fail(`expected a refusal (${rule})`)
}

/**
 * The state a reader computes from the stored frames, asserting every stored `state` frame
 * applies to the state before it (a reader passes over one that does not: the state the writer
 * believed in and the one the page shows would differ).
 */
async function readersState(assert: any, sink: LucidTokenStreamSink, id: string) {
  let current: AgentState | null = null
  for await (const page of sink.storedRows(id)) {
    for (const row of page) {
      if (row.kind !== 'event') continue
      const event = JSON.parse(row.body).event
      if (event.kind !== 'state') continue
      const next = applyStateEvent(current, event, Number.POSITIVE_INFINITY)
      assert.property(next, 'state', `stored state frame at seq ${row.seq} does not apply`)
      if ('state' in next) current = next.state
    }
  }
  return current
}

/** A transient failure (what a driver throws when the database went away). */
const gone = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

/**
 * The sink's commit, failing `before` it (nothing stored) or `after` it (stored, the reply lost)
 * when `fault(n)` says so.
 */
function injectCommitFaults(
  sink: LucidTokenStreamSink,
  fault: (n: number) => 'before' | 'after' | null
) {
  const { store } = sinkInternals(sink)
  const commit = store.commit.bind(store)
  let n = 0
  store.commit = async (...args: Parameters<typeof commit>) => {
    const what = fault(++n)
    if (what === 'before') throw gone()
    const result = await commit(...args)
    if (what === 'after') throw gone()
    return result
  }
}

test.group('Agent state | sink.append (the SPI direct path)', () => {
  test('checked as a writer checks it: no snapshot yet, does not apply, __proto__, over the cap; nothing stored', async ({
    assert,
  }) => {
    const { db, sink } = await setupSink({ maxStateBytes: 64 })
    const id = runId('state-append')
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'hello' })
    await writer.flush()
    const append = (frame: StreamFrame) => sink.append(id, { frames: [frame] })
    await refused(
      assert,
      append(state({ delta: [{ op: 'add', path: '/a', value: 1 }] })),
      'statePatchApplies'
    )
    await refused(assert, append(state({ snapshot: { big: 'x'.repeat(100) } })), 'maxStateBytes')
    await append(state({ snapshot: { a: 1, list: [] } }))
    await refused(
      assert,
      append(state({ delta: [{ op: 'replace', path: '/missing/deep', value: 1 }] })),
      'statePatchApplies'
    )
    await refused(
      assert,
      append(state({ delta: [{ op: 'add', path: '/__proto__/polluted', value: 1 }] })),
      'statePatchApplies'
    )
    await refused(
      assert,
      append(state({ delta: [{ op: 'add', path: '/list/-', value: 'y'.repeat(80) }] })),
      'maxStateBytes'
    )
    // Two frames of one append: the second is checked against the state the first leaves.
    await refused(
      assert,
      sink.append(id, {
        frames: [
          state({ delta: [{ op: 'remove', path: '/a' }] }),
          state({ delta: [{ op: 'test', path: '/a', value: 1 }] }),
        ],
      }),
      'statePatchApplies'
    )
    await append(state({ delta: [{ op: 'add', path: '/list/-', value: 'b' }] }))
    assert.isUndefined(({} as any).polluted)
    // The text, the snapshot and the delta: nothing of the refused appends.
    assert.equal(await countRows(db, 'agent_stream_frames', id), 3)
    // The writer, open all along, checks against what the appends stored.
    await writer.write(state({ delta: [{ op: 'test', path: '/list', value: ['b'] }] }))
    await writer.end()
    assert.deepEqual(await readersState(assert, sink, id), { a: 1, list: ['b'] })
  })

  test('after the run ended: refused as closed, or, appended to the ended stream, checked too', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state-ended')
    const writer = await sink.open(id)
    await writer.write(state({ snapshot: { n: 1 } }))
    await writer.end()
    await assert.rejects(() => writer.write(state({ snapshot: { n: 2 } })), StreamClosedError)
    await assert.rejects(
      () => sink.append(id, { frames: [state({ snapshot: { n: 2 } })] }),
      StreamClosedError
    )
    await refused(
      assert,
      sink.append(id, {
        frames: [state({ delta: [{ op: 'test', path: '/n', value: 2 }] })],
        evenIfClosed: true,
      }),
      'statePatchApplies'
    )
    await sink.append(id, {
      frames: [state({ delta: [{ op: 'replace', path: '/n', value: 2 }] })],
      evenIfClosed: true,
    })
    assert.deepEqual(await readersState(assert, sink, id), { n: 2 })
    assert.equal((await sink.head(id))!.status, 'ended')
  })
})

test.group('Agent state | a commit retried is applied once', () => {
  test('end({ last }) retried after it failed: checked against the stored state, not the one the failed attempt left', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state-end')
    const writer = await sink.open(id)
    await writer.write(state({ snapshot: { count: 1, items: [] } }))
    // Compare-and-set: applies once, never twice.
    const last = state({
      delta: [
        { op: 'test', path: '/count', value: 1 },
        { op: 'replace', path: '/count', value: 2 },
        { op: 'add', path: '/items/-', value: 'x' },
      ],
    })
    let calls = 0
    const within = async () => {
      if (++calls === 1) throw new Error('the first end fails in its transaction')
    }
    await assert.rejects(
      () => writer.end({ last, within }),
      'the first end fails in its transaction'
    )
    await writer.end({ last, within })
    assert.equal(calls, 2)
    assert.deepEqual(await readersState(assert, sink, id), { count: 2, items: ['x'] })
  })

  test('a commit whose reply was lost (landed) is retried once; the writer checks the next delta against the stored state', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state-landed')
    const writer = await sink.open(id)
    await writer.write(state({ snapshot: { n: 0, log: [] } }))
    // Every other commit lands and then loses its reply: the retry finds it stored.
    let faulty = true
    injectCommitFaults(sink, (n) => (faulty && n % 2 === 1 ? 'after' : null))
    for (let i = 1; i <= 4; i++) {
      await writer.write(
        state({
          delta: [
            { op: 'test', path: '/n', value: i - 1 },
            { op: 'replace', path: '/n', value: i },
            { op: 'add', path: '/log/-', value: i },
          ],
        })
      )
      await writer.write({ t: 'text', v: `step ${i} ` })
    }
    // Through an outage a write is acknowledged before it commits: the database answers again.
    await writer.flush()
    faulty = false
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'test', path: '/n', value: 3 }] })),
      'statePatchApplies'
    )
    await writer.end({
      last: state({ delta: [{ op: 'test', path: '/log', value: [1, 2, 3, 4] }] }),
    })
    assert.deepEqual(await readersState(assert, sink, id), { n: 4, log: [1, 2, 3, 4] })
  })
})

test.group('Agent state | a delta its commit refuses', () => {
  test('the text held with it is written at once, nothing of the delta', async ({ assert }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 60_000 })
    const id = runId('state-held')
    const writer = await sink.open(id)
    await writer.write(state({ snapshot: { n: 1 } }))
    await writer.write({ t: 'text', v: 'first ' })
    // Held (the window is long): it would go out with the delta's commit.
    await writer.write({ t: 'text', v: 'held' })
    await refused(
      assert,
      writer.write(state({ delta: [{ op: 'test', path: '/n', value: 2 }] })),
      'statePatchApplies'
    )
    const rows = []
    for await (const page of sink.storedRows(id)) rows.push(...page)
    assert.deepEqual(
      rows.map((row) => [row.kind, row.kind === 'text' ? row.body : '']),
      [
        ['event', ''],
        ['text', 'first held'],
      ]
    )
    await writer.end()
  })

  test('through a database outage: acknowledged, then refused by the next call; nothing stored', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state-outage')
    const writer = await sink.open(id)
    await writer.write(state({ snapshot: { n: 1 } }))
    // The database goes away for the next three attempts: writes are held and acknowledged.
    injectCommitFaults(sink, (n) => (n <= 3 ? 'before' : null))
    await writer.write(state({ delta: [{ op: 'test', path: '/n', value: 2 }] }))
    // Once the database answers again, the delta's commit refuses it.
    await writer.flush()
    await writer.write(state({ delta: [{ op: 'replace', path: '/n', value: 3 }] })).then(
      () => assert.fail('the refusal is thrown by the next call'),
      (error) => assert.instanceOf(error, InvalidFrameError)
    )
    await writer.write(state({ delta: [{ op: 'replace', path: '/n', value: 4 }] }))
    await writer.end()
    assert.deepEqual(await readersState(assert, sink, id), { n: 4 })
  })
})

test.group('Agent state | two writers of one stream', () => {
  test('a writer opened while another holds the stream checks against what the other stored', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('state-two')
    const a = await sink.open(id)
    await a.write(state({ snapshot: { a: 1 } }))
    // A second writer (a delegated child's, a reopen): it opened after the first snapshot.
    const b = await sink.open(id)
    await a.write(state({ snapshot: { b: 2 } }))
    // Against the stream's state ({ b: 2 }), `/a` is gone: refused, nothing stored.
    await refused(
      assert,
      b.write(state({ delta: [{ op: 'remove', path: '/a' }] })),
      'statePatchApplies'
    )
    // A delta of one that the other's next delta builds on.
    await b.write(state({ delta: [{ op: 'add', path: '/c', value: 3 }] }))
    await a.write(state({ delta: [{ op: 'test', path: '/c', value: 3 }] }))
    await a.write(state({ delta: [{ op: 'remove', path: '/b' }] }))
    await refused(
      assert,
      b.write(state({ delta: [{ op: 'test', path: '/b', value: 2 }] })),
      'statePatchApplies'
    )
    await b.flush()
    await a.end()
    assert.deepEqual(await readersState(assert, sink, id), { c: 3 })
  })

  test('two replicas writing at once: each delta checked under the stream lock, exactly as many as apply are stored', async ({
    assert,
  }) => {
    const { sink: one } = await setupSink()
    // SQLite is one process's database (a second connection waits on its file lock, which the
    // writer rides out as an outage): its two writers share the one sink.
    const two = DIALECT === 'sqlite' ? one : (await setupSink({}, false)).sink
    const id = runId('state-race')
    const first = await one.open(id)
    await first.write(state({ snapshot: { items: Array.from({ length: 20 }, (_, i) => i) } }))
    const second = await two.open(id)
    // 30 removals of the first item between them, 20 items: 20 apply, 10 are refused.
    const removals = async (writer: typeof first) => {
      let refusals = 0
      for (let i = 0; i < 15; i++) {
        await writer
          .write(state({ delta: [{ op: 'remove', path: '/items/0' }] }))
          .catch((error) => {
            assert.instanceOf(error, InvalidFrameError)
            refusals++
          })
      }
      return refusals
    }
    const refusals = await Promise.all([removals(first), removals(second)])
    assert.equal(refusals[0] + refusals[1], 10)
    await second.flush()
    await first.end()
    assert.deepEqual(await readersState(assert, one, id), { items: [] })
  })

  test('another replica (its own sink) reopening the stream, then a takeover after a lease lapse', async ({
    assert,
  }) => {
    const { sink: one } = await setupSink({ leaseMs: 200 })
    const { sink: two } = await setupSink({ leaseMs: 200 }, false)
    const id = runId('state-replicas')
    const first = await one.open(id, {}, undefined, { segment: 1 })
    await first.write(state({ snapshot: { owner: 'one', steps: [] } }))
    // Replica two opens the stream while replica one holds it (a second writer).
    const second = await two.open(id)
    await first.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'one-1' }] }))
    await second.write(state({ delta: [{ op: 'add', path: '/steps/-', value: 'two-1' }] }))
    await first.write(state({ delta: [{ op: 'test', path: '/steps', value: ['one-1', 'two-1'] }] }))
    second.release()
    // Replica one's process dies (its writer stops renewing), replica two takes the segment over.
    first.release()
    await sleep(400)
    const taken = await two.takeOver(id, [{ t: 'text', v: 'taken over ' }], () => ({}))
    assert.isNotNull(taken)
    await refused(
      assert,
      taken!.writer.write(state({ delta: [{ op: 'test', path: '/steps', value: ['one-1'] }] })),
      'statePatchApplies'
    )
    await taken!.writer.write(state({ delta: [{ op: 'replace', path: '/owner', value: 'two' }] }))
    await taken!.writer.end()
    assert.deepEqual(await readersState(assert, one, id), {
      owner: 'two',
      steps: ['one-1', 'two-1'],
    })
    // What every reader of either replica holds at the end.
    const frames = await collect(two.subscribe(id))
    assert.isAbove(frames.length, 4)
  })
})
