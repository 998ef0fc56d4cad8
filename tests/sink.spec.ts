import { test } from '@japa/runner'
import { InvalidCursorError, InvalidFrameError, StreamClosedError } from '../src/errors.js'
import type { StreamFrame } from '../src/core/frames.js'
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { connectionConfig, createDatabase, resetTables } from './helpers/db.js'
import { collect, countRows, runId, setupSink, sleep, textOf } from './helpers/sink.js'

const strip = ({ cursor: _, ...frame }: any) => frame

test.group('LucidTokenStreamSink | write and replay', () => {
  test('replays every frame written, in order, and ends at end()', async ({ assert }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    const frames: StreamFrame[] = [
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'text', v: 'Hello' },
      { t: 'text', v: ', world' },
      {
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'c1',
          name: 'search',
          input: { q: 1 },
          toolKind: 'read',
        },
      },
      { t: 'event', event: { kind: 'tool-output', id: 'c1', output: ['a'] } },
      { t: 'text', v: 'Done.' },
      { t: 'error', code: 'model_no_output', message: 'nothing' },
    ]
    for (const frame of frames) await writer.write(frame)
    await writer.end()

    const got = await collect(sink.subscribe(id))
    assert.deepEqual(textOf(got), 'Hello, worldDone.')
    assert.deepEqual(
      got.filter((f) => f.t !== 'text').map(strip),
      frames.filter((f) => f.t !== 'text')
    )
    assert.isTrue(await sink.has(id))
  })

  test('consecutive text is stored as one row; any other frame starts a new one', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ coalesceWindowMs: 30 })
    const id = runId()
    const writer = await sink.open(id)
    for (let i = 0; i < 50; i++) {
      await writer.write({ t: 'text', v: `t${i} ` })
      await sleep(2)
    }
    await writer.write({ t: 'event', event: { kind: 'step-finish' } })
    for (let i = 0; i < 20; i++) await writer.write({ t: 'text', v: `u${i} ` })
    await writer.end()
    // text row, event row, text row, end marker
    assert.equal(await countRows(db, 'agent_stream_frames', id), 4)
    const got = await collect(sink.subscribe(id))
    assert.equal(got.length, 3)
    assert.equal((got[0] as any).v, Array.from({ length: 50 }, (_, i) => `t${i} `).join(''))
  })

  test('the first text is written at once; held text is written within the window', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 40 })
    const id = runId()
    const writer = await sink.open(id)
    const reader = sink.subscribe(id)[Symbol.asyncIterator]()
    await writer.write({ t: 'event', event: { kind: 'step-start' } })
    assert.equal((await reader.next()).value.t, 'event')

    await writer.write({ t: 'text', v: 'first' })
    // Committed before write() resolved: the reader has it without waiting for the window.
    const first = await reader.next()
    assert.equal((first.value as any).v, 'first')

    const heldAt = Date.now()
    await writer.write({ t: 'text', v: ' second' })
    const second = await reader.next()
    assert.equal((second.value as any).v, ' second')
    assert.isBelow(Date.now() - heldAt, 40 + 200)
    await writer.end()
    assert.isTrue((await reader.next()).done)
  })

  test('flush() writes held text without ending the stream', async ({ assert }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 5000 })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'a' })
    await writer.write({ t: 'text', v: 'b' })
    await writer.flush()
    // Stored as one growing row: a replay gets it as one frame, before the window lapsed.
    const got = await collect(sink.subscribe(id), { limit: 1, timeoutMs: 2000 })
    assert.deepEqual(strip(got[0]), { t: 'text', v: 'ab' })
    assert.equal(got[0].cursor, '1.2')
    await writer.end()
  })

  test('a reopened stream continues its sequence; old end markers do not stop a replay', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    let writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'one' })
    await writer.end()
    writer = await sink.open(id)
    await writer.write({ t: 'event', event: { kind: 'title', title: 'T' } })
    await writer.write({ t: 'text', v: 'two' })
    await writer.end()
    const got = await collect(sink.subscribe(id))
    assert.deepEqual(
      got.map((f) => f.cursor),
      ['1.3', '3', '4.3']
    )
    assert.equal(textOf(got), 'onetwo')
  })

  test('writes after end() are refused', async ({ assert }) => {
    const { sink } = await setupSink()
    const writer = await sink.open(runId())
    await writer.end()
    await assert.rejects(() => writer.write({ t: 'text', v: 'late' }), StreamClosedError)
  })

  test('a stream that does not exist: has() is false and subscribe yields nothing', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    assert.isFalse(await sink.has('nope'))
    assert.deepEqual(await collect(sink.subscribe('nope')), [])
  })
})

test.group('LucidTokenStreamSink | invalid frames', () => {
  const invalid: [string, unknown, string][] = [
    ['unknown t', { t: 'bogus' }, 't'],
    ['text not a string', { t: 'text', v: 42 }, 'v'],
    ['lone surrogate', { t: 'text', v: 'a\uD800b' }, 'v'],
    ['NUL in text', { t: 'text', v: 'a\u0000b' }, 'v'],
    ['error code unknown', { t: 'error', code: 'boom', message: 'x' }, 'code'],
    ['approval without runId', { t: 'approval', id: 'a', toolName: 'x', input: {} }, 'runId'],
    ['event without kind', { t: 'event', event: {} }, 'event.kind'],
    [
      'tool-output without id',
      { t: 'event', event: { kind: 'tool-output', output: 1 } },
      'event.id',
    ],
    [
      'component partial not true',
      { t: 'component', name: 'c', data: 1, partial: false },
      'partial',
    ],
    ['not an object', 'text', ''],
  ]
  for (const [name, frame, field] of invalid) {
    test(`refuses ${name} with a typed error and stores nothing`, async ({ assert }) => {
      const { sink, db } = await setupSink()
      const id = runId()
      const writer = await sink.open(id)
      const error = await (writer.write(frame as StreamFrame) as Promise<void>).then(
        () => null,
        (e) => e
      )
      assert.instanceOf(error, InvalidFrameError)
      assert.equal(error.code, 'E_INVALID_FRAME')
      assert.include(
        error.issues.map((i: { field: string }) => i.field),
        field
      )
      // Never echoes the value.
      assert.notInclude(error.message, '\u0000')
      assert.notInclude(error.message, 'boom')
      assert.equal(await countRows(db, 'agent_stream_frames', id), 0)
      // The writer keeps working.
      await writer.write({ t: 'text', v: 'ok' })
      await writer.end()
      assert.equal(textOf(await collect(sink.subscribe(id))), 'ok')
    })
  }

  test('refuses a frame over the size limit', async ({ assert }) => {
    const { sink, db } = await setupSink({ maxFrameBytes: 1024 })
    const id = runId()
    const writer = await sink.open(id)
    const error = await writer
      .write({ t: 'event', event: { kind: 'tool-output', id: 'c', output: 'x'.repeat(2000) } })
      .catch((e) => e)
    assert.instanceOf(error, InvalidFrameError)
    assert.deepEqual(error.issues, [{ field: '', rule: 'maxBytes' }])
    assert.equal(await countRows(db, 'agent_stream_frames', id), 0)
    await writer.end()
  })

  test('unknown event kinds pass (readers must tolerate them)', async ({ assert }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'event', event: { kind: 'future-kind', extra: 1 } as any })
    await writer.end()
    const [frame] = await collect(sink.subscribe(id))
    assert.deepEqual(strip(frame), { t: 'event', event: { kind: 'future-kind', extra: 1 } })
  })

  test('an invalid cursor is refused', ({ assert }) => {
    return setupSink().then(({ sink }) => {
      for (const bad of ['x', '-1', '1.', '1.2.3', '01', ' 1']) {
        assert.throws(() => sink.subscribe('r', { after: bad }), InvalidCursorError.message)
      }
    })
  })
})

test.group('LucidTokenStreamSink | parked frames', () => {
  test('an approval row is written once, with the park it joined: one INSERT, no UPDATE', async ({
    assert,
    cleanup,
  }) => {
    // `debug` makes Lucid report every statement (its `db:query` event).
    const statements: string[] = []
    let recording = false
    const db = createDatabase({ ...connectionConfig(), debug: true }, (query) => {
      if (recording) statements.push(query.sql)
    })
    await resetTables(db)
    const parked: number[] = []
    const sink = new LucidTokenStreamSink(db, {
      park: async (_trx, _meta, _frame, seq) => {
        parked.push(seq)
        return 7
      },
    })
    cleanup(async () => {
      await sink.shutdown()
      await db.manager.closeAll()
    })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'Asking. ' })
    const approval: StreamFrame = {
      t: 'approval',
      runId: id,
      id: 'call-1',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
    }
    recording = true
    try {
      await writer.write(approval)
    } finally {
      recording = false
    }
    const frames = statements.filter((sql) => sql.includes('agent_stream_frames'))
    assert.lengthOf(
      frames.filter((sql) => /^\s*insert/i.test(sql)),
      1,
      frames.join('\n')
    )
    assert.lengthOf(
      frames.filter((sql) => /^\s*update/i.test(sql)),
      0,
      frames.join('\n')
    )
    await writer.end()
    const [row] = await db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('kind', 'approval')
    assert.deepEqual(parked, [Number(row.seq)])
    assert.deepEqual(JSON.parse(row.body), { ...approval, park: 7 })
    const replayed = (await collect(sink.subscribe(id))).map(strip)
    assert.deepEqual(replayed, [
      { t: 'text', v: 'Asking. ' },
      { ...approval, park: 7 },
    ])
  })
})
