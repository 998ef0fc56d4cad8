import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import type { Database } from '@adonisjs/lucid/database'
import { InvalidFrameError } from '../src/errors.js'
import type { DeliveredFrame, StreamFrame } from '../src/core/frames.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { createRuntime } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { createDatabase, DIALECT, resetTables } from './helpers/db.js'
import { parseSse } from './helpers/agui.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'

/** Every string anywhere in `value` (keys too) is well-formed Unicode. */
function wellFormedDeep(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed()
  if (Array.isArray(value)) return value.every(wellFormedDeep)
  if (value && typeof value === 'object') {
    return Object.entries(value).every(([k, v]) => k.isWellFormed() && wellFormedDeep(v))
  }
  return true
}

/** A lone surrogate written as a JSON escape (`\ud83d`): what some clients reject. */
const LONE_ESCAPE = /(^|[^\\])(\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/

/** The stored text rows of a run, with each body's length in characters as the database counts. */
async function textRows(db: Database, id: string) {
  const length = DIALECT === 'mysql' ? 'CHAR_LENGTH(body)' : 'LENGTH(body)'
  const rows = await db
    .connection()
    .from('agent_stream_frames')
    .where('run_id', id)
    .where('kind', 'text')
    .select('seq', 'body', db.connection().raw(`${length} as chars`))
    .orderBy('seq')
  return rows.map((r: any) => ({
    seq: Number(r.seq),
    body: r.body as string,
    chars: Number(r.chars),
  }))
}

test.group('Text at code-point granularity | the writer', () => {
  test('the issue: "Smile \\uD83D" then "\\uDE00 done." is one emoji, stored and read whole', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ coalesceWindowMs: 20 })
    const id = runId('smile')
    const writer = await sink.open(id)
    const live = collect(sink.subscribe(id))
    await writer.write({ t: 'text', v: 'Smile \uD83D' })
    await writer.write({ t: 'text', v: '\uDE00 done.' })
    await writer.end()
    for (const frames of [await live, await collect(sink.subscribe(id))]) {
      assert.equal(textOf(frames), 'Smile 😀 done.')
      assert.isTrue(frames.every((f) => wellFormedDeep(f)))
    }
    const rows = await textRows(db, id)
    assert.equal(rows.map((r) => r.body).join(''), 'Smile 😀 done.')
    // The database holds the emoji as ONE character (MySQL: utf8mb4), never a broken half.
    assert.equal(
      rows.reduce((n, r) => n + r.chars, 0),
      [...'Smile 😀 done.'].length
    )
    for (const row of rows) assert.isTrue(row.body.isWellFormed())
  })

  test('a half that stays lone becomes U+FFFD; the run goes on; a lone surrogate inside a write is refused', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 5 })
    const cases: [string, (w: any) => Promise<void>, string][] = [
      [
        'next text does not start with the low half',
        async (w) => {
          await w.write({ t: 'text', v: 'a\uD83D' })
          await w.write({ t: 'text', v: 'b' })
        },
        'a\uFFFDb',
      ],
      [
        'a non-text frame comes between',
        async (w) => {
          await w.write({ t: 'text', v: 'a\uD83D' })
          await w.write({ t: 'event', event: { kind: 'step-start' } })
          await w.write({ t: 'text', v: '\uDE00b' })
        },
        'a\uFFFD\uFFFDb',
      ],
      [
        'flush comes between',
        async (w) => {
          await w.write({ t: 'text', v: 'a\uD83D' })
          await w.flush()
          await w.write({ t: 'text', v: '\uDE00b' })
        },
        'a\uFFFD\uFFFDb',
      ],
      [
        'end comes',
        async (w) => {
          await w.write({ t: 'text', v: 'a\uD83D' })
        },
        'a\uFFFD',
      ],
      [
        'a write that is only a high half, then its low half, then a pair split again',
        async (w) => {
          await w.write({ t: 'text', v: '\uD83D' })
          await w.write({ t: 'text', v: '' })
          await w.write({ t: 'text', v: '\uDE00\uD83D' })
          await sleep(10)
          await w.write({ t: 'text', v: '\uDE01' })
        },
        '😀😁',
      ],
    ]
    for (const [name, script, expected] of cases) {
      const id = runId('lone')
      const writer = await sink.open(id)
      await script(writer)
      await writer.end()
      const frames = await collect(sink.subscribe(id))
      assert.equal(textOf(frames), expected, name)
      assert.isTrue(
        frames.every((f) => wellFormedDeep(f)),
        name
      )
    }

    // Not a split pair: a lone surrogate inside one write is refused, and changes nothing.
    const id = runId('inside')
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'x\uD83D' })
    await assert.rejects(() => writer.write({ t: 'text', v: '\uDE00a\uD800b' }), InvalidFrameError)
    await writer.write({ t: 'text', v: '\uDE00!' })
    await writer.end()
    assert.equal(textOf(await collect(sink.subscribe(id))), 'x😀!')
  })

  test('a lone surrogate anywhere in any frame is refused by name (no \\udXXX escape reaches the wire)', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId('deep')
    const writer = await sink.open(id)
    const bad: StreamFrame[] = [
      { t: 'component', name: 'card', data: { s: 'a\uD800' } },
      { t: 'component', name: 'card', data: { ['k\uDC00']: 1 } },
      { t: 'event', event: { kind: 'tool-output', id: 'c1', output: ['\uDFFF'] } },
      { t: 'event', event: { kind: 'custom-kind', extra: { deep: ['\uD83D'] } } as any },
    ]
    for (const frame of bad) {
      const error = await writer.write(frame).then(
        () => null,
        (e) => e
      )
      assert.instanceOf(error, InvalidFrameError)
      assert.isTrue(String(error.message).isWellFormed())
      assert.include(error.message, 'wellFormed')
    }
    await assert.rejects(
      () => sink.append(id, { frames: [{ t: 'text', v: 'a\uD83D' }] }),
      InvalidFrameError
    )
    await writer.end()
    assert.deepEqual(await collect(sink.subscribe(id)), [])
  })

  test('text appended outside a writer is stored and read as its text', async ({ assert }) => {
    const { sink, db } = await setupSink()
    const id = runId('append')
    const writer = await sink.open(id)
    await sink.append(id, { frames: [{ t: 'text', v: 'Smile 😀' }] })
    await writer.end()
    assert.equal(textOf(await collect(sink.subscribe(id))), 'Smile 😀')
    assert.deepEqual(
      (await textRows(db, id)).map((r) => [r.body, r.chars]),
      [['Smile 😀', 7]]
    )
  })

  test('a text row split by maxTextRowChars never cuts between a pair', async ({ assert }) => {
    const { sink, db } = await setupSink({ coalesceWindowMs: 40, maxTextRowChars: 6 })
    const id = runId('rowsplit')
    const writer = await sink.open(id)
    // Each write ends inside a pair: a row boundary at a write boundary would cut it.
    const pieces = [
      'ab',
      'cd\uD83D',
      '\uDE00e\uD83D',
      '\uDE01fg\uD83D',
      '\uDE02',
      'hi\uD83D',
      '\uDE03',
    ]
    for (const v of pieces) await writer.write({ t: 'text', v })
    await writer.end()
    const rows = await textRows(db, id)
    assert.isAbove(rows.length, 1)
    for (const row of rows) assert.isTrue(row.body.isWellFormed(), JSON.stringify(row.body))
    assert.equal(rows.map((r) => r.body).join(''), pieces.join(''))
    assert.equal(textOf(await collect(sink.subscribe(id))), pieces.join(''))
  })
})

test.group('Text at code-point granularity | cursors', () => {
  test('a client cursor between the halves of a pair is read as the pair start, on every read path', async ({
    assert,
  }) => {
    const served = await serveApp({
      runner: {
        async start(ctx) {
          await ctx.writer.write({ t: 'text', v: 'A😀B😁' })
          return { status: 'finished' }
        },
        async resume() {
          return { status: 'finished' }
        },
      },
    })
    const db: Database = await served.app.container.make('lucid.db')
    await resetTables(db)
    const threadId = `t-${randomUUID()}`
    const id = randomUUID()
    await (await postJson(`${served.url}/agui`, runInput(threadId, id))).text()
    await served.agentStream.driver.settled()
    const [row] = await textRows(db, id)
    assert.equal(row.body, 'A😀B😁')
    const { sink } = served.agentStream
    // Offsets 2 and 5 fall between a high and a low half: each reads as 1 and 4.
    for (const [offset, rest] of [
      [2, '😀B😁'],
      [5, '😁'],
    ] as const) {
      const inside = `${row.seq}.${offset}`
      const frames = await collect(sink.subscribe(id, { after: inside }))
      assert.equal(textOf(frames), rest, `subscribe after ${inside}`)
      const until = await collect(
        sink.replay(id, { until: { seq: row.seq, offset } }) as AsyncIterable<DeliveredFrame>
      )
      assert.equal(textOf(until), 'A😀B😁'.slice(0, offset - 1), `replay until ${inside}`)
      for (const f of [...frames, ...until]) assert.isTrue(wellFormedDeep(f))

      const native = await (
        await fetch(`${served.url}/runs/${id}/stream?after=${inside}`, {
          headers: { 'x-user': 'alice' },
        })
      ).text()
      assert.notMatch(native, LONE_ESCAPE)
      assert.equal(textOf(parseSse(native).map((e) => e.event as any)), rest, `native ${inside}`)

      const agui = await (
        await fetch(`${served.url}/agui/runs/${id}?after=${inside}`, {
          headers: { 'x-user': 'alice' },
        })
      ).text()
      assert.notMatch(agui, LONE_ESCAPE)
      const events = parseSse(agui).map((e) => e.event)
      assert.isTrue(events.every((e) => wellFormedDeep(e)))
      assert.equal(
        events
          .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
          .map((e) => e.delta)
          .join(''),
        rest,
        `AG-UI ${inside}`
      )
    }
  })
})

test.group('Text at code-point granularity | cursors from the feed window', () => {
  test('a cursor between the halves of a pair, served from the replica window, reads as the pair start', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 50 })
    const id = runId('window')
    const writer = await sink.open(id)
    await sinkInternals(sink).tail.follow(id)
    await writer.write({ t: 'text', v: 'A' })
    // Grown in place: the window holds a delivery from offset 1, then one from offset 4.
    await writer.write({ t: 'text', v: '😀B' })
    await writer.flush()
    await writer.write({ t: 'text', v: '😁' })
    await writer.end()
    assert.isAbove(sinkInternals(sink).tail.windowLength(id), 0)
    const [first] = await collect(sink.subscribe(id), { limit: 1 })
    const seq = first.cursor.split('.')[0]
    for (const [offset, rest] of [
      [2, '😀B😁'],
      [5, '😁'],
    ] as const) {
      const frames = await collect(sink.subscribe(id, { after: `${seq}.${offset}` }))
      assert.equal(textOf(frames), rest, `after ${seq}.${offset}`)
      for (const f of frames) assert.isTrue(wellFormedDeep(f))
    }
    sinkInternals(sink).tail.unfollow(id)
  })
})

test.group('Text at code-point granularity | inputs echoed on the wire', () => {
  test('a lone surrogate in a RunAgentInput, a start body or a decision is refused (4xx), nothing stored', async ({
    assert,
  }) => {
    const served = await serveApp({
      runner: scriptedAgent({ steps: ['approval'] }),
      agui: { messagesSnapshot: true },
    })
    const db: Database = await served.app.container.make('lucid.db')
    await resetTables(db)
    const lone = 'hi \uD83D'
    const count = async () =>
      Number((await db.connection().from('agent_stream_frames').count('* as n').first()).n)

    const agui = await postJson(`${served.url}/agui`, {
      ...runInput(`t-${randomUUID()}`, randomUUID()),
      messages: [{ id: 'u', role: 'user', content: lone }],
    })
    assert.equal(agui.status, 400)
    const refused = (await agui.json()) as any
    assert.equal(refused.code, 'invalid_input')
    assert.include(refused.message, 'wellFormed')
    const start = await postJson(`${served.url}/runs`, { message: lone })
    assert.equal(start.status, 422)
    assert.equal(await count(), 0)

    // A parked approval: a decision whose reason or input holds a lone half is refused.
    const threadId = `t-${randomUUID()}`
    const parked = randomUUID()
    const body = await (await postJson(`${served.url}/agui`, runInput(threadId, parked))).text()
    assert.notMatch(body, LONE_ESCAPE)
    await served.agentStream.driver.settled()
    const before = await count()
    const [item] = await db.connection().from('agent_approvals').select('item_id')
    for (const decision of [{ reason: lone }, { input: { q: lone } }]) {
      const response = await postJson(
        `${served.url}/items/${parked}/${item.item_id}/approve`,
        decision
      )
      assert.equal(response.status, 422, JSON.stringify(decision))
    }
    assert.equal(await count(), before)
  })
})

/** Random text of BMP and astral characters, written in pieces cut at random UTF-16 positions. */
const textAndCuts = fc
  .array(
    fc.oneof(
      fc.constantFrom('a', 'b', ' ', 'é', '中', '\uFFFD'),
      fc.constantFrom('😀', '𝄞', '🎉', '👍🏽', '𐍈')
    ),
    { minLength: 1, maxLength: 40 }
  )
  .map((chars) => chars.join(''))
  .chain((text) =>
    fc.record({
      text: fc.constant(text),
      cuts: fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, text.length - 1) }), {
        maxLength: 12,
      }),
      pauses: fc.array(fc.constantFrom(0, 0, 0, 3, 12), { minLength: 13, maxLength: 13 }),
      /** After which pieces another frame comes (only where no pair is split). */
      frames: fc.array(fc.boolean(), { minLength: 13, maxLength: 13 }),
    })
  )

function piecesOf(text: string, cuts: number[]) {
  const at = [0, ...cuts.filter((c) => c < text.length).sort((a, b) => a - b), text.length]
  return at.slice(1).map((end, i) => text.slice(at[i], end))
}

test.group('Text at code-point granularity | property', () => {
  test('text split anywhere, coalesced, re-attached at every minted cursor: exactly the text, well-formed', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const scripts = new Map<string, { pieces: string[]; pauses: number[]; frames: boolean[] }>()
    const runner: AgentRunner = {
      async start(ctx) {
        const script = scripts.get(ctx.threadId)!
        for (const [i, v] of script.pieces.entries()) {
          await ctx.writer.write({ t: 'text', v })
          const split = /[\uD800-\uDBFF]$/.test(v)
          if (script.frames[i] && !split) {
            await ctx.writer.write({ t: 'component', name: 'card', data: { i } })
          }
          if (script.pauses[i]) await sleep(script.pauses[i])
        }
        return { status: 'finished' }
      },
      async resume() {
        return { status: 'finished' }
      },
    }
    const runtime = createRuntime(db, { runner, coalesceWindowMs: 5, maxTextRowChars: 7 })
    const handle = createAgUiFetchHandler(runtime.door, {
      basePath: '/agui',
      principal: () => ({ id: 'alice' }),
    })
    cleanup(async () => {
      await runtime.driver.settled()
      await runtime.sink.shutdown()
      await db.manager.closeAll()
    })
    const { sink } = runtime
    const get = async (path: string) => {
      const body = await (await handle(new Request(`http://x/agui${path}`))).text()
      assert.notMatch(body, LONE_ESCAPE)
      const events = parseSse(body)
      for (const e of events) assert.isTrue(wellFormedDeep(e.event), JSON.stringify(e.event))
      return events
    }
    const deltas = (events: { event: any }[]) =>
      events
        .filter((e) => e.event.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.event.delta)
        .join('')

    await fc.assert(
      fc.asyncProperty(textAndCuts, async ({ text, cuts, pauses, frames }) => {
        const pieces = piecesOf(text, cuts)
        const threadId = `t-${randomUUID()}`
        const id = randomUUID()
        scripts.set(threadId, { pieces, pauses, frames })
        const response = await handle(
          new Request('http://x/agui', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(runInput(threadId, id)),
          })
        )
        const live = parseSse(await response.text())
        await runtime.driver.settled()
        assert.equal(deltas(live), text)

        // Every cursor minted (native and AG-UI ids) falls between code points of its row.
        const bodies = new Map<number, string>()
        for await (const rows of sink.storedRows(id)) {
          for (const row of rows) if (row.kind === 'text') bodies.set(row.seq, row.body)
        }
        for (const row of bodies.values()) assert.isTrue(row.isWellFormed())
        const assertMinted = (cursor: string) => {
          const [seq, offset] = cursor.split('.').map(Number)
          if (offset === undefined || !bodies.has(seq)) return
          const body = bodies.get(seq)!
          assert.isTrue(body.slice(0, offset).isWellFormed(), `cursor ${cursor} splits a pair`)
        }

        // The native stream: from the start and from every cursor it minted.
        const seen = await collect(sink.subscribe(id))
        assert.equal(textOf(seen), text)
        for (const f of seen) assertMinted(f.cursor)
        for (let cut = 0; cut <= seen.length; cut++) {
          const prefix = seen.slice(0, cut)
          for (const f of prefix) assert.isTrue(wellFormedDeep(f))
          const rest = await collect(sink.subscribe(id, { after: prefix.at(-1)?.cursor }))
          for (const f of rest) assert.isTrue(wellFormedDeep(f))
          assert.equal(textOf(prefix) + textOf(rest), text)
        }

        // The AG-UI door: whole, and re-attached at every id it sent.
        const full = await get(`/runs/${id}`)
        assert.equal(deltas(full), text)
        for (const [i, e] of full.entries()) {
          if (!e.id) continue
          assertMinted(e.id)
          const again = await get(`/runs/${id}?after=${e.id}`)
          assert.equal(deltas(full.slice(0, i + 1)) + deltas(again), text, `after ${e.id}`)
        }
        scripts.delete(threadId)
      }),
      { numRuns: Number(process.env.PROPERTY_RUNS ?? 25) }
    )
  }).timeout(180_000)
})
