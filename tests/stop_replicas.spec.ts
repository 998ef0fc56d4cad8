import { test } from '@japa/runner'
import type { AgentRunner } from '../src/runner/contract.js'
import type { RuntimeOptions } from '../src/runtime.js'
import type { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import type { DeliveredFrame } from '../src/core/frames.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { jsonClient } from './helpers/http.js'
import { Replica } from './helpers/replica.js'
import { redisChannel, redisNotifier, type RedisNotifierSpec } from './helpers/redis.js'
import { collect, runId, sleep, textOf } from './helpers/sink.js'
import { within } from './helpers/bounded.js'
import { DIALECT } from './helpers/db.js'

/*
 * Replica A is a second Node process (tests/fixtures/stop_replica.ts) that runs the agent;
 * replica B is this process: a runtime on the same database, its AG-UI door (and stop routes)
 * served on loopback, which never runs the agent (its runner records any call).
 */

const CANCELLED = { t: 'event', event: { kind: 'cancelled' } }
const LEASE_MS = 1500

type Frame = Record<string, any>
type Served = Awaited<ReturnType<typeof serveRuntime>>

/** A runner that must not run here: it records each call. */
function untouched(calls: string[]): AgentRunner {
  const record = (name: string) => async () => {
    calls.push(name)
    return { status: 'finished' as const }
  }
  return { start: record('start'), resume: record('resume'), continue: record('continue') }
}

/** Replica B: a runtime on fresh tables, its AG-UI door served by the Fetch handler. */
async function serveB(
  options: Partial<RuntimeOptions>,
  calls: string[],
  cleanup: (fn: () => Promise<void>) => void
) {
  const served = await serveRuntime(
    { ...options, runner: untouched(calls) },
    (runtime, principal) => createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
  )
  cleanup(served.close)
  return served
}

/** Until a sink's notifier (NOTIFY's LISTEN, Redis's SUBSCRIBE) listens; a poll listens always. */
async function listens(sink: LucidTokenStreamSink) {
  const [notifier] = sinkInternals(sink).tail.notifiers as { listening?: boolean }[]
  const deadline = Date.now() + 5000
  while (notifier?.listening === false) {
    if (Date.now() > deadline) throw new Error('the notifier did not listen within 5000 ms')
    await sleep(10)
  }
}

/** A run of Alice's started on replica A; resolves once its agent talks (`Hello, ` stored). */
async function startOnA(assert: any, a: Replica) {
  const id = runId('stop')
  const talking = a.told((message) => message.talking === id)
  assert.isTrue((await a.call({ op: 'start', runId: id, ownerId: 'alice' })).started)
  const { written } = await talking
  return { id, written: written as number }
}

/** The AG-UI door's stop route on B, as Alice. */
const stopOn = (b: Served, id: string) =>
  jsonClient(`${b.url}/agui`)('POST', `/runs/${id}/stop`, {})

const strip = (frames: DeliveredFrame[]): Frame[] =>
  frames.map(({ cursor: _cursor, ...frame }) => frame)

/** A stream's stored frames, cursors left out (each segment end as `{ t: 'end' }`). */
const storedOf = async (sink: LucidTokenStreamSink, id: string) =>
  strip(await collect(sink.replay(id) as AsyncIterable<DeliveredFrame>))

/** The frames that end a run some way: `cancelled`, or an error. */
const terminals = (frames: Frame[]) =>
  frames.filter(
    (frame) => frame.t === 'error' || (frame.t === 'event' && frame.event.kind === 'cancelled')
  )

/** Frames as a reader tells them apart: text rows joined, segment ends left out. */
const asRead = (frames: Frame[]) =>
  frames.reduce<Frame[]>((out, frame) => {
    const last = out.at(-1)
    if (frame.t === 'end') return out
    if (frame.t === 'text' && last?.t === 'text')
      out[out.length - 1] = { t: 'text', v: last.v + frame.v }
    else out.push(frame)
    return out
  }, [])

const lastSaid = (frames: Frame[]) => frames.filter((frame) => frame.t !== 'end').at(-1)

/** Each way a stop reaches replica A: the notifier both replicas use (the poll 60 s beside one). */
const NOTIFIERS: {
  name: string
  dialects?: (typeof DIALECT)[]
  a: (channel: string) => { options: object; redis?: RedisNotifierSpec }
  b: (channel: string) => Partial<RuntimeOptions>
}[] = [
  {
    name: 'PostgreSQL NOTIFY',
    dialects: ['pg'],
    a: () => ({ options: { notifier: 'notify', pollIntervalMs: 60_000 } }),
    b: () => ({ notifier: 'notify', pollIntervalMs: 60_000 }),
  },
  {
    name: 'Redis',
    a: (channel) => ({
      options: { pollIntervalMs: 60_000 },
      redis: { channel, pollIntervalMs: 60_000 },
    }),
    b: (channel) => ({
      pollIntervalMs: 60_000,
      notifier: redisNotifier({ channel, pollIntervalMs: 60_000 }),
    }),
  },
  {
    name: 'poll only',
    a: () => ({ options: { notifier: 'poll', pollIntervalMs: 100 } }),
    b: () => ({ notifier: 'poll', pollIntervalMs: 100 }),
  },
]

test.group('Stop across replicas | the agent on A, the stop on B', (group) => {
  group.each.timeout(60_000)

  for (const notifier of NOTIFIERS) {
    if (notifier.dialects && !notifier.dialects.includes(DIALECT)) continue
    test(`${notifier.name}: A's agent sees its signal abort, the partial text stays, B's reader sees cancelled`, async ({
      assert,
      cleanup,
    }) => {
      const channel = redisChannel()
      const calls: string[] = []
      const b = await serveB(notifier.b(channel), calls, cleanup)
      const { options, redis } = notifier.a(channel)
      const a = await Replica.start(options, { script: 'stop', redis })
      const { id, written } = await startOnA(assert, a)
      const reading = collect(b.runtime.sink.subscribe(id), { timeoutMs: 20_000 })
      await listens(b.runtime.sink)

      const aborted = a.told((message) => message.aborted === id)
      const answer = await stopOn(b, id)
      assert.deepEqual([answer.status, answer.json], [200, { status: 'cancelled' }], answer.text)
      // A's agent was told through its signal, and wrote nothing more after it.
      assert.deepEqual(await aborted, { aborted: id, written })

      const seen = strip(await reading)
      assert.equal(textOf(seen as any), 'Hello, ')
      assert.lengthOf(textOf(seen as any), written)
      assert.deepEqual(lastSaid(seen), CANCELLED)
      assert.deepEqual(terminals(seen), [CANCELLED])
      assert.deepEqual(asRead(await storedOf(b.runtime.sink, id)), asRead(seen))
      assert.equal((await b.runtime.sink.head(id))!.status, 'ended')
      const row = await b.db.from('agent_streams').where('run_id', id).first()
      assert.deepEqual([row.stop_mode, row.stop_by], ['keep', 'alice'])
      assert.deepEqual(calls, [])
    })
  }
})

test.group('Stop across replicas | A killed (-9) during the stop', (group) => {
  group.each.timeout(60_000)

  test('202 stopping, then B takes the lapsed segment over and ends it cancelled once, the runner not called', async ({
    assert,
    cleanup,
  }) => {
    const calls: string[] = []
    const b = await serveB(
      { leaseMs: LEASE_MS, pollIntervalMs: 100, stop: { waitMs: 300 } },
      calls,
      cleanup
    )
    // A hears the stop but its agent ignores its signal, and the grace outlasts the test.
    const a = await Replica.start(
      { leaseMs: LEASE_MS, pollIntervalMs: 100, stop: { graceMs: 60_000 } } as object,
      { script: 'stop', agent: { ignoreSignal: true } }
    )
    const { id } = await startOnA(assert, a)
    const reading = collect(b.runtime.sink.subscribe(id), { timeoutMs: 30_000 })
    await listens(b.runtime.sink)

    const aborted = a.told((message) => message.aborted === id)
    const answer = await stopOn(b, id)
    // A is alive (its lease renewed) but has not ended the stream: the stop is recorded only.
    assert.deepEqual([answer.status, answer.json], [202, { status: 'stopping' }], answer.text)
    const { written } = await aborted
    const before = await storedOf(b.runtime.sink, id)
    assert.equal(textOf(before as any), 'Hello, still talking')
    assert.lengthOf(textOf(before as any), written)
    assert.equal((await b.runtime.sink.head(id))!.status, 'open')

    const exited = new Promise((resolve) => a.child.once('exit', resolve))
    a.kill('SIGKILL')
    await within(exited, 5000, 'replica A did not exit')
    // B finds the lapsed lease (its reader or its sweeper, whichever first) and takes it over.
    const deadline = Date.now() + 20_000
    while ((await b.runtime.sink.head(id))!.status === 'open') {
      if (Date.now() > deadline) throw new Error('the lapsed stream was never taken over')
      await b.runtime.parking.sweeper.settleLapsed()
      await sleep(100)
    }
    await within(b.runtime.driver.settled(), 10_000, 'the takeover did not settle')

    const after = await storedOf(b.runtime.sink, id)
    // Nothing stored is lost; after it, the takeover's mark, `cancelled` once and the end.
    assert.deepEqual(after.slice(0, before.length), before)
    assert.deepEqual(
      after.slice(before.length).map((frame) => (frame.t === 'event' ? frame.event.kind : frame.t)),
      ['segment-continued', 'cancelled', 'end']
    )
    assert.deepEqual(terminals(after), [CANCELLED])
    assert.deepEqual(asRead(strip(await reading)), asRead(after))
    assert.equal((await b.runtime.sink.head(id))!.status, 'ended')
    assert.deepEqual(calls, [], 'the runner was called again')
    // The stop, asked again, says what happened.
    const again = await stopOn(b, id)
    assert.deepEqual([again.status, again.json], [200, { status: 'cancelled' }], again.text)
  })
})

test.group('Stop across replicas | a stop racing the run ending on A', (group) => {
  group.each.timeout(120_000)

  test('one outcome each time, and the stop answers it: 200 cancelled or 409 E_RUN_FINISHED', async ({
    assert,
    cleanup,
  }) => {
    const calls: string[] = []
    const b = await serveB({ pollIntervalMs: 50 }, calls, cleanup)
    const a = await Replica.start({ pollIntervalMs: 50 }, { script: 'stop' })
    // Negative: the stop is sent that long before the finish; else after it.
    for (const offsetMs of [-100, -60, -40, -30, -20, -15, -10, -5, -2, 0, 2, 5, 20]) {
      const { id } = await startOnA(assert, a)
      const finish = () => a.call({ op: 'finish', runId: id })
      let stopping: ReturnType<typeof stopOn>
      if (offsetMs < 0) {
        stopping = stopOn(b, id)
        await sleep(-offsetMs)
        await finish()
      } else {
        const finished = finish()
        if (offsetMs > 0) await sleep(offsetMs)
        stopping = stopOn(b, id)
        await finished
      }
      const answer = await stopping
      const deadline = Date.now() + 10_000
      while ((await b.runtime.sink.head(id))!.status === 'open') {
        if (Date.now() > deadline) throw new Error(`run ${id} never ended`)
        await sleep(20)
      }
      const frames = await storedOf(b.runtime.sink, id)
      const what = `offset ${offsetMs} ms: ${answer.status} ${answer.text}`
      assert.lengthOf(
        frames.filter((frame) => frame.t === 'end'),
        1,
        what
      )
      if (answer.status === 200) {
        assert.deepEqual(answer.json, { status: 'cancelled' }, what)
        assert.deepEqual(terminals(frames), [CANCELLED], what)
        assert.deepEqual(lastSaid(frames), CANCELLED, what)
      } else {
        assert.deepEqual([answer.status, answer.json?.code], [409, 'E_RUN_FINISHED'], what)
        assert.deepEqual(terminals(frames), [], what)
        assert.equal(textOf(frames as any), 'Hello, goodbye.', what)
      }
      // Asked again, the stop says the same.
      const again = await stopOn(b, id)
      assert.deepEqual([again.status, again.text], [answer.status, answer.text], what)
    }
    assert.deepEqual(calls, [])
  })
})
