import { test } from '@japa/runner'
import fc from 'fast-check'
import type { DeliveredFrame, StreamFrame } from '../src/core/frames.js'
import { getActiveTest } from '@japa/runner'
import { createRuntime } from '../src/runtime.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { assertConforms, type WireEvent } from './helpers/agui.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'

const cleanupWith = (fn: () => Promise<void>) => getActiveTest()?.cleanup(fn)

/** Text every dialect stores unchanged (the writer refuses the rest, see validate.ts). */
const token = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 6 })
  .filter((s) => s.isWellFormed() && !s.includes('\u0000'))

type Step =
  | { write: StreamFrame; pauseMs: number }
  | { flush: true }
  | { call: { id: string; streamed: boolean } }

const step: fc.Arbitrary<Extract<Step, { write: unknown } | { flush: true }>> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      write: token.map((v): StreamFrame => ({ t: 'text', v })),
      pauseMs: fc.constantFrom(0, 0, 1, 8),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      write: fc
        .nat(1000)
        .map((n): StreamFrame => ({ t: 'event', event: { kind: 'title', title: `e${n}` } })),
      pauseMs: fc.constant(0),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      write: fc.nat(1000).map((n): StreamFrame => ({ t: 'component', name: 'card', data: { n } })),
      pauseMs: fc.constant(0),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ flush: true as const }) }
)

const nonText = (frames: { t: string }[]) =>
  frames.filter((f) => f.t !== 'text').map(({ cursor: _, ...f }: any) => JSON.stringify(f))

/**
 * The property with the default byte budgets, and with budgets so small that every store page
 * is its first two rows and the shared window its one newest delivery (page and window edges
 * fall on every row).
 */
const BUDGETS = [
  { name: 'default byte budgets', options: {} },
  { name: 'byte budgets smaller than a row', options: { readerBytes: 8, windowBytes: 8 } },
]

test.group('Cursors (property)', () => {
  for (const budget of BUDGETS)
    test(`reconnecting from every cursor yields exactly what followed it: no gap, no duplicate (${budget.name})`, async ({
      assert,
    }) => {
      const { sink } = await setupSink({
        coalesceWindowMs: 5,
        maxTextRowChars: 40,
        ...budget.options,
      })
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
          const id = runId('prop')
          const writer = await sink.open(id)
          // Follow the stream before the first write and keep following it: the replica's feed
          // stays alive, so the resumes below are served from its shared window.
          await sinkInternals(sink).tail.follow(id)
          const live = collect(sink.subscribe(id))
          const written: StreamFrame[] = []
          for (const s of steps) {
            if ('flush' in s) {
              await writer.flush()
              continue
            }
            await writer.write(s.write)
            written.push(s.write)
            if (s.pauseMs) await sleep(s.pauseMs)
          }
          await writer.end()
          const seen: DeliveredFrame[] = await live

          // The live reader got everything once.
          assert.equal(textOf(seen), textOf(written))
          assert.deepEqual(nonText(seen), nonText(written))

          // Cut after every frame the live reader got (cursors inside coalesced rows included),
          // and after every frame a full replay gives: prefix + resume == everything.
          const replay = await collect(sink.subscribe(id))
          const fromWindow = sinkInternals(sink).tail.windowLength(id) > 0
          for (const frames of [seen, replay]) {
            for (let cut = 0; cut <= frames.length; cut++) {
              const prefix = frames.slice(0, cut)
              const after = cut === 0 ? undefined : prefix.at(-1)!.cursor
              const rest = await collect(sink.subscribe(id, { after }))
              assert.equal(textOf(prefix) + textOf(rest), textOf(written))
              assert.deepEqual([...nonText(prefix), ...nonText(rest)], nonText(written))
            }
          }
          assert.isTrue(fromWindow)
          sinkInternals(sink).tail.unfollow(id)
        }),
        { numRuns: Number(process.env.PROPERTY_RUNS ?? 25) }
      )
    }).timeout(180_000)
})

/** What a door run is made of: the steps above, tool calls (streamed or not), steps, replaced components. */
const doorStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: step },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom('a', 'b'), fc.nat(9)).map(([id, n]): Step => ({
      write: { t: 'component', name: 'card', id, data: { n } },
      pauseMs: 0,
    })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('step-start', 'step-finish')
      .map((kind): Step => ({ write: { t: 'event', event: { kind } } as StreamFrame, pauseMs: 0 })),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.boolean(), fc.nat(99)).map(([streamed, n]): Step => ({
      call: { id: `c${n}`, streamed },
    })),
  }
)

/** The events a client folds into its view: text merged per message, each activity once. */
function view(events: WireEvent[]) {
  const out: unknown[] = []
  const activity: Record<string, unknown> = {}
  for (const event of events) {
    const last = out.at(-1) as WireEvent | undefined
    if (event.type === 'TEXT_MESSAGE_CONTENT' && last?.type === 'TEXT_MESSAGE_CONTENT') {
      if (last.messageId === event.messageId) {
        out[out.length - 1] = { ...last, delta: last.delta + event.delta }
        continue
      }
    }
    if (event.type === 'ACTIVITY_SNAPSHOT') {
      // A replaced version a re-attached reader may not get again: the place and the last one count.
      if (!(event.messageId in activity)) out.push({ type: event.type, messageId: event.messageId })
      activity[event.messageId] = event.content
      continue
    }
    out.push(event)
  }
  return { out, activity }
}

async function drain(events: AsyncIterable<{ event: any; id?: string }>) {
  const out: { event: WireEvent; id?: string }[] = []
  for await (const item of events) out.push(item)
  return out
}

test.group('Cursors (property): the AG-UI door', () => {
  test('a cut after EVERY event of a random run, re-attached with the last id seen: exactly the rest', async ({
    assert,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const runtime = createRuntime(db, {
      runner: {
        start: async () => ({ status: 'finished' }),
        resume: async () => ({ status: 'finished' }),
      },
      coalesceWindowMs: 5,
      maxTextRowChars: 40,
      // A checkpoint every other row: re-attaches start from them, cold and warm.
      agui: { stateDeltas: true, checkpointEvery: 2 },
    })
    const { sink, door } = runtime
    cleanupWith(async () => {
      await sink.shutdown()
      await db.manager.closeAll()
    })
    const attach = async (id: string, after?: string) => {
      const reply = await door.reattach(id, after, null)
      if (reply.kind !== 'stream') throw new Error(`refused: ${reply.code}`)
      return drain(reply.events)
    }
    await fc.assert(
      fc.asyncProperty(fc.array(doorStep, { minLength: 1, maxLength: 30 }), async (steps) => {
        const id = runId('door')
        await door.runs.insert({
          runId: id,
          threadId: id,
          streamRunId: id,
          afterSeq: 0,
          kind: 'start',
          resumeHash: null,
          ownerId: null,
        })
        const writer = await sink.open(id)
        const live = attach(id)
        for (const s of steps) {
          if ('flush' in s) await writer.flush()
          else if ('call' in s) {
            const { id: callId, streamed } = s.call
            const call = { id: callId, name: 'f', toolKind: 'read' as const }
            if (streamed) {
              await writer.write({ t: 'event', event: { kind: 'tool-input-start', ...call } })
              await writer.write({
                t: 'event',
                event: { kind: 'tool-input-delta', id: callId, delta: '{}' },
              })
            }
            await writer.write({
              t: 'event',
              event: { kind: 'tool-input-available', ...call, input: {} },
            })
          } else {
            await writer.write(s.write)
            if (s.pauseMs) await sleep(s.pauseMs)
          }
        }
        await writer.end()
        const seen = await live
        const replay = await attach(id)
        assert.deepEqual(view(replay.map((e) => e.event)), view(seen.map((e) => e.event)))
        for (const [name, full] of [
          ['live', seen],
          ['replay', replay],
        ] as const) {
          for (let cut = 0; cut < full.length - 1; cut++) {
            const had = full.slice(0, cut + 1)
            const at = had.findLastIndex((e) => e.id)
            const rest = await attach(id, at === -1 ? undefined : had[at].id)
            const prelude = at === -1 ? 0 : rest.findIndex((e) => e.id)
            const tail = rest.slice(prelude)
            assert.equal(rest[0].event.type, 'RUN_STARTED')
            if (name === 'replay') assert.deepEqual(tail, full.slice(at + 1))
            const joined = [...full.slice(0, at + 1), ...tail].map((e) => e.event)
            assert.deepEqual(view(joined), view(full.map((e) => e.event)), `${name}, cut ${cut}`)
            await assertConforms(
              assert,
              rest.map((e) => e.event)
            )
          }
        }
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 25) }
    )
  }).timeout(300_000)
})
