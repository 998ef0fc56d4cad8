import { test } from '@japa/runner'
import fc from 'fast-check'
import type { DeliveredFrame, StreamFrame } from '../src/core/frames.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

/** Text every dialect stores unchanged (the writer refuses the rest, see validate.ts). */
const token = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 6 })
  .filter((s) => s.isWellFormed() && !s.includes('\u0000'))

type Step = { write: StreamFrame; pauseMs: number } | { flush: true }

const step: fc.Arbitrary<Step> = fc.oneof(
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
          await sink.tail.follow(id)
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
          const fromWindow = sink.tail.windowLength(id) > 0
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
          sink.tail.unfollow(id)
        }),
        { numRuns: Number(process.env.PROPERTY_RUNS ?? 25) }
      )
    }).timeout(180_000)
})
