import { test } from '@japa/runner'
import { collect, runId, setupSink } from './helpers/sink.js'

test.group('sink.replay', () => {
  test('yields what segments() yields for stored rows, from after up to until', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'hello world' })
    await writer.write({ t: 'component', name: 'card', id: 'c', data: { v: 1 } })
    await writer.write({ t: 'component', name: 'card', id: 'c', data: { v: 2 } })
    await writer.end()
    const all = await collect(sink.replay(id) as any)
    const live = await collect(sink.segments(id) as any, { limit: all.length })
    assert.deepEqual(all, live)
    assert.deepEqual(
      all.map((item: any) => item.cursor),
      ['1.11', '3', '4']
    )
    assert.equal((all.at(-1) as any).t, 'end')
    // From a cursor inside the text row, up to a cursor inside it.
    const cut = await collect(
      sink.replay(id, { after: '1.2', until: { seq: 1, offset: 5 } }) as any
    )
    assert.deepEqual(cut, [{ t: 'text', v: 'llo', cursor: '1.5' }] as any)
    // Up to a whole row, exclusive start.
    const middle = await collect(sink.replay(id, { after: { seq: 1 }, until: { seq: 3 } }) as any)
    assert.deepEqual(
      middle.map((item: any) => item.cursor),
      ['3']
    )
  })
})
