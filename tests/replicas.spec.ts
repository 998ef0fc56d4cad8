import { test } from '@japa/runner'
import { RUN_FAILED_MESSAGE } from '../src/sink/subscriber.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, setupSink, textOf } from './helpers/sink.js'

test.group('Two replicas (a second Node process)', () => {
  test('frames written in one process reach a reader in the other, live', async ({ assert }) => {
    const { sink } = await setupSink({ pollIntervalMs: 100 })
    const replica = await Replica.start({ pollIntervalMs: 100 })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reading = collect(sink.subscribe(id))
    const words = Array.from({ length: 40 }, (_, i) => `w${i} `)
    await replica.call({
      op: 'write',
      runId: id,
      delayMs: 3,
      frames: [
        { t: 'event', event: { kind: 'step-start' } },
        ...words.map((v) => ({ t: 'text', v })),
        { t: 'event', event: { kind: 'step-finish' } },
      ],
    })
    await replica.call({ op: 'end', runId: id })
    const frames = await reading
    assert.equal(textOf(frames), words.join(''))
    assert.deepEqual(
      frames.filter((f) => f.t === 'event').map((f: any) => f.event.kind),
      ['step-start', 'step-finish']
    )
    // And the other way round: this process writes, the replica reads.
    const back = runId()
    const writer = await sink.open(back)
    const got: any[] = []
    const sub = replica.subscribe(back, (frame) => got.push(frame))
    await sub.ready
    await writer.write({ t: 'text', v: 'hello from here' })
    await writer.end()
    await sub.done
    assert.equal(textOf(got), 'hello from here')
  })

  test('kill -9 of the writer mid-stream: the reader gets run_failed and ends', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ pollIntervalMs: 100 })
    const replica = await Replica.start({ leaseMs: 1000 })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    await replica.call({
      op: 'write',
      runId: id,
      frames: [
        { t: 'event', event: { kind: 'step-start' } },
        { t: 'text', v: 'partial answ' },
      ],
    })
    const reading = collect(sink.subscribe(id), { timeoutMs: 10_000 })
    replica.kill('SIGKILL')
    const killedAt = Date.now()
    const frames = await reading
    const last = frames.at(-1) as any
    assert.equal(textOf(frames), 'partial answ')
    assert.deepInclude(last, { t: 'error', code: 'run_failed', message: RUN_FAILED_MESSAGE })
    // Lease (1 s) plus a poll (0.1 s) and slack: bounded, not forever.
    assert.isBelow(Date.now() - killedAt, 5000)
    const status = await db.connection().from('agent_streams').where('run_id', id).first()
    assert.equal(status.status, 'failed')
    // A later reader replays the same ending.
    const again = await collect(sink.subscribe(id))
    assert.deepEqual(again, frames)
  })

  test('a parent and children writing one stream from two processes: every seq once, in order', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink()
    const a = await Replica.start()
    const b = await Replica.start()
    const id = runId()
    await a.call({ op: 'open', runId: id })
    const perWriter = 25
    await Promise.all([
      a.call({ op: 'family', runId: id, children: 3, frames: perWriter }),
      b.call({ op: 'family', runId: id, children: 3, frames: perWriter }),
    ])
    await a.call({ op: 'end', runId: id })
    const rows = await db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .orderBy('seq', 'asc')
      .select('seq', 'kind')
    // Gap-free: 1, 2, 3 ... up to the end marker.
    const total = 2 * 4 * perWriter
    assert.deepEqual(
      rows.map((r: any) => Number(r.seq)),
      Array.from({ length: rows.length }, (_, i) => i + 1)
    )
    const frames = await collect(sink.subscribe(id))
    // Every writer's text tokens arrive once, in the order it wrote them.
    const tokens = [...textOf(frames).matchAll(/\[([^\]]+)\]/g)].map((m) => m[1])
    assert.lengthOf(tokens, total)
    const tokensBy = new Map<string, number[]>()
    for (const token of tokens) {
      const [who, n] = token.split(':')
      tokensBy.set(who, [...(tokensBy.get(who) ?? []), Number(n)])
    }
    for (const ns of tokensBy.values()) {
      assert.deepEqual(
        ns,
        Array.from({ length: perWriter }, (_, i) => i)
      )
    }
    const titles = frames.filter((f) => f.t === 'event').map((f: any) => f.event.title as string)
    assert.lengthOf(titles, total)
    assert.lengthOf(new Set(titles), total)
    // Each writer's own frames arrive in the order it wrote them.
    const byWriter = new Map<string, number[]>()
    for (const title of titles) {
      const [who, n] = title.split(':')
      byWriter.set(who, [...(byWriter.get(who) ?? []), Number(n)])
    }
    assert.equal(byWriter.size, 8)
    for (const ns of byWriter.values()) {
      assert.deepEqual(
        ns,
        Array.from({ length: perWriter }, (_, i) => i)
      )
    }
  }).timeout(60_000)
})
