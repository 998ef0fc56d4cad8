import { test } from '@japa/runner'
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import type { Database } from '@adonisjs/lucid/database'
import type { AgentRunner } from '../src/runner/contract.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { readUntil, runInput } from './helpers/http.js'

/**
 * Both doors' shared live fan-out (issue 26, `src/door/live_hub.ts`): many viewers of one run
 * (an AG-UI run, a useChat turn) get, byte for byte (SSE ids included), what a lone viewer gets, live and joining
 * mid-run; a viewer that stops reading delays no one and catches up exactly; the database reads
 * of a live run do not grow with its viewers. Real HTTP on loopback, the run in lockstep (each
 * step released once every reading viewer had the one before), so a lone viewer's stream is
 * the reference.
 */

/** A runner whose steps the test releases one at a time: step i writes `text(i)`. */
function steppedRunner(text: (i: number) => string, steps: number) {
  let release: (() => void) | null = null
  let waiting: Promise<void> = Promise.resolve()
  const next = () => {
    waiting = new Promise<void>((resolve) => (release = resolve))
  }
  next()
  const runner: AgentRunner = {
    start: async (ctx) => {
      for (let i = 0; i < steps; i++) {
        await waiting
        next()
        await ctx.writer.write({ t: 'text', v: text(i) })
      }
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
  return { runner, step: () => release?.() }
}

/** One SSE viewer over node:http (its socket read as fast as it comes, unless paused). */
function viewer(url: string, path: string) {
  let body = ''
  let onData: (() => void) | null = null
  let response: http.IncomingMessage | null = null
  const ended = new Promise<void>((resolve, reject) => {
    http
      .get(`${url}${path}`, { agent: false, headers: { 'x-user': 'alice' } }, (res) => {
        response = res
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
          onData?.()
        })
        res.on('end', resolve)
        res.on('error', reject)
      })
      .on('error', reject)
  })
  return {
    ended,
    get body() {
      return body
    },
    /** Resolves once the body so far includes `text`. */
    has(text: string) {
      return new Promise<void>((resolve) => {
        const check = () => {
          if (body.includes(text)) {
            onData = null
            resolve()
          }
        }
        onData = check
        check()
      })
    },
    pause: () => response?.pause(),
    resume: () => response?.resume(),
  }
}

type Viewer = ReturnType<typeof viewer>

/** A body with its UUIDs as placeholders in order of appearance (two runs then compare). */
function normalized(body: string) {
  const seen = new Map<string, string>()
  return body.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
    if (!seen.has(id)) seen.set(id, `<id${seen.size}>`)
    return seen.get(id)!
  })
}

/** Count the SELECTs the database serves (as its driver sees them). */
function countReads(db: Database) {
  const counter = { reads: 0 }
  const clients = new Set([db.connection().getReadClient(), db.connection().getWriteClient()])
  for (const client of clients) {
    client.on('query', (q: { sql: string }) => {
      if (/^\s*select/i.test(q.sql) && !/^\s*select pg_notify/i.test(q.sql)) counter.reads++
    })
  }
  return counter
}

const marker = (i: number) => `<${i}>`

/** A new run started through the door's POST (a new thread, or chat), as alice: its response. */
function startRun(door: 'agui' | 'chat', url: string) {
  const threadId = `t-${randomUUID()}`
  const runId = randomUUID()
  const started = fetch(`${url}/${door}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify(
      door === 'agui'
        ? runInput(threadId, runId)
        : {
            id: runId,
            messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
            trigger: 'submit-message',
          }
    ),
  })
  return { runId, started }
}

/**
 * One run in lockstep: `live` viewers attached before it talks, `late` more joining at step
 * `joinAt`; each step released once every viewer had the previous one, but the `paused` first
 * ones, which stop reading at step `pauseAt` (after they joined the fan-out) until the end.
 */
async function lockstepRun(
  door: 'agui' | 'chat',
  served: { url: string; db: Database },
  step: () => void,
  steps: number,
  counts: { live: number; late: number; joinAt: number; paused?: number; pauseAt?: number }
) {
  const { runId, started } = startRun(door, served.url)
  const starter = await started
  const starterBody = starter.text()
  const path = door === 'agui' ? `/agui/runs/${runId}` : `/chat/${runId}/stream`
  const live: Viewer[] = []
  for (let v = 0; v < counts.live; v++) live.push(viewer(served.url, path))
  // Every viewer attached (its RUN_STARTED came) before the run talks.
  await Promise.all(live.map((v) => v.has(door === 'agui' ? 'RUN_STARTED' : '"start"')))
  const paused = live.slice(0, counts.paused ?? 0)
  const late: Viewer[] = []
  const reads = countReads(served.db)
  let readsAtStart = 0
  for (let i = 0; i < steps; i++) {
    if (i === counts.joinAt) {
      for (let v = 0; v < counts.late; v++) late.push(viewer(served.url, path))
      await Promise.all(late.map((v) => v.has(marker(i - 1))))
    }
    if (i === 1) readsAtStart = reads.reads
    if (i === (counts.pauseAt ?? 0)) for (const v of paused) v.pause()
    step()
    const reading = [...live.filter((v) => !paused.includes(v)), ...late]
    await Promise.all(reading.map((v) => v.has(marker(i))))
  }
  const liveReads = reads.reads - readsAtStart
  for (const v of paused) v.resume()
  await Promise.all([...live, ...late].map((v) => v.ended))
  await starterBody
  const norm = (v: Viewer) => normalized(v.body)
  return { live: live.map(norm), late: late.map(norm), liveReads }
}

async function serveDoor(runner: AgentRunner, cleanup: (fn: () => any) => void) {
  const served = await serveRuntime({ runner }, (runtime, principal) => {
    const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
    const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal })
    return (request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
  })
  cleanup(served.close)
  return served
}

for (const door of ['agui', 'chat'] as const) {
  test.group(`Live fan-out on the ${door} door: many viewers of one run`, () => {
    test('200 viewers, live and joining mid-run, get byte for byte what a lone viewer gets (ids included)', async ({
      assert,
      cleanup,
    }) => {
      const steps = 12
      const { runner, step } = steppedRunner((i) => `${marker(i)} `, steps)
      const served = await serveDoor(runner, cleanup)
      const lone = await lockstepRun(door, served, step, steps, { live: 1, late: 1, joinAt: 6 })
      const many = await lockstepRun(door, served, step, steps, { live: 200, late: 20, joinAt: 6 })
      assert.include(lone.live[0], 'id: ')
      assert.include(lone.live[0], door === 'agui' ? 'RUN_FINISHED' : '"finish"')
      for (const body of many.live) assert.equal(body, lone.live[0])
      // A viewer joining mid-run catches up by reading the feed's window or the store (what it
      // gets before the live tail depends on which: timing, not the fan-out): every one of them
      // gets the same bytes, and from the live tail on the lone one's.
      const tail = (body: string) => body.slice(body.indexOf(`":"${marker(7)}`))
      for (const body of many.late) {
        assert.equal(body, many.late[0])
        assert.equal(tail(body), tail(lone.late[0]))
      }
    }).timeout(120_000)

    test('a viewer that stops reading delays no one and, read again, catches up exactly', async ({
      assert,
      cleanup,
    }) => {
      // Big steps, more than the hub's window (1 MiB) and the sockets' buffers hold: the paused
      // viewer's socket fills, its server side
      // stops pulling and falls behind the hub, then reads its own way back.
      const steps = 300
      const pad = 'x'.repeat(32_768)
      const { runner, step } = steppedRunner((i) => `${marker(i)}${pad} `, steps)
      const served = await serveDoor(runner, cleanup)
      const lone = await lockstepRun(door, served, step, steps, { live: 1, late: 0, joinAt: -1 })
      const many = await lockstepRun(door, served, step, steps, {
        live: 6,
        late: 0,
        joinAt: -1,
        paused: 1,
        pauseAt: 5,
      })
      for (const body of many.live) assert.equal(body, lone.live[0])
    }).timeout(180_000)

    test('the database reads of a live run do not grow with its viewers', async ({
      assert,
      cleanup,
    }) => {
      const steps = 20
      const { runner, step } = steppedRunner((i) => `${marker(i)} `, steps)
      const served = await serveDoor(runner, cleanup)
      const one = await lockstepRun(door, served, step, steps, { live: 1, late: 0, joinAt: -1 })
      const many = await lockstepRun(door, served, step, steps, { live: 100, late: 0, joinAt: -1 })
      // A few reads either way (the writer's, the tail's polls, the fan-out's one replay; on a
      // loaded machine some viewers attach while the run talks and read their first page), never
      // a read per viewer.
      assert.isAtMost(many.liveReads, one.liveReads + 50, `${one.liveReads} -> ${many.liveReads}`)
    }).timeout(120_000)
  })
}

/**
 * A runner that writes `frames` rows (text, then a step's end, in turn: rows the sink does not
 * coalesce), then, once `more` is called, one more text row, then keeps its stream open until
 * `release`.
 */
function longOpenRunner(frames: number) {
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let more!: () => void
  const next = new Promise<void>((resolve) => (more = resolve))
  const runner: AgentRunner = {
    start: async (ctx) => {
      for (let i = 0; i < frames / 2; i++) {
        await ctx.writer.write({ t: 'text', v: `${marker(i)} ` })
        await ctx.writer.write({ t: 'event', event: { kind: 'step-finish', usage: {} } })
      }
      await next
      await ctx.writer.write({ t: 'text', v: '<more> ' })
      await held
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
  return { runner, release, more }
}

/** Resolves once `check` holds (polled), or fails after `ms`. */
async function eventually(check: () => boolean, ms: number, what: string) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

for (const door of ['agui', 'chat'] as const) {
  test.group(`Live fan-out on the ${door} door: a viewer replaying a long run`, () => {
    test('opens the shared fan-out only once it caught up with the tail: the stored rows are read once', async ({
      assert,
      cleanup,
    }) => {
      const frames = 2_000
      const { runner, release, more } = longOpenRunner(frames)
      const served = await serveDoor(runner, cleanup)
      cleanup(() => {
        more()
        release()
      })
      const { runId, started } = startRun(door, served.url)
      const last = marker(frames / 2 - 1)
      await readUntil(await started, (text) => (text.includes(last) ? true : undefined))
      // The starter gone, this replica follows nothing: no fan-out of the run is left.
      const { tail } = sinkInternals(served.runtime.sink)
      await eventually(() => tail.followed === 0, 10_000, 'the starter let go of the run')
      // Where each read of the stream starts: the viewer's own from the run's start, then the
      // fan-out's, opened by the viewer once it reads from this replica's feed (begun at the
      // stream's last row: the viewer reaches it after its replay), never one from near the
      // start beside the viewer's.
      const starts: number[] = []
      const sink = served.runtime.sink
      const segments = sink.segments.bind(sink)
      sink.segments = ((id, options) => {
        const after = options?.after
        starts.push(typeof after === 'object' ? after.seq : Number(after ?? 0))
        return segments(id, options)
      }) as typeof sink.segments
      cleanup(() => void (sink.segments = segments))
      const path = door === 'agui' ? `/agui/runs/${runId}` : `/chat/${runId}/stream`
      const replayed = await fetch(`${served.url}${path}`, { headers: { 'x-user': 'alice' } })
      assert.equal(replayed.status, 200)
      let body = ''
      const reading = readUntil(replayed, (text) => {
        body = text
        return text.includes('<more>') ? true : undefined
      })
      await eventually(() => body.includes(last), 30_000, 'the replay reached the run end')
      await eventually(() => starts.length === 2, 10_000, 'the fan-out opened at the tail')
      assert.isBelow(starts[0], 10, 'the viewer reads from the run start')
      assert.isAtLeast(starts[1], frames - 1, `the fan-out opened at seq ${starts[1]}`)
      // What comes next reaches the viewer through the fan-out: no read of its own.
      more()
      await reading
      assert.lengthOf(starts, 2)
    }).timeout(60_000)
  })
}
