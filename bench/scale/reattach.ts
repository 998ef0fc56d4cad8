/**
 * Issue 26, "flat cost at any run length": re-attach on a replica that never served the run,
 * and the first replay of a long run against later ones, on a run with a component every five
 * frames (most of them new ids, every tenth one the same `progress` id, replaced).
 *
 * Per database and run length (1k / 10k / 100k frames; 1M with BENCH_FULL=1; BENCH_QUICK=1:
 * 1k / 10k):
 * - `agui.first_replay_eps` / `agui.steady_replay_eps`: the whole run re-attached from its
 *   start over HTTP (the AG-UI Fetch handler), events/s: the first time on a replica (which
 *   leaves checkpoints, in memory and stored), then again on it (the best of two); the same for
 *   the useChat turn (`ui.first_replay_cps` / `ui.steady_replay_cps`, chunks/s);
 * - `agui.fresh_reattach_p50_ms` / `_p99_ms`: on a fresh replica each time (a new runtime, so
 *   only stored checkpoints help), a re-attach at a random cursor to its first event after it;
 * - `ui.fresh_resume_p50_ms` / `_p99_ms`: the same for the useChat resume
 *   (`GET /chat/:chatId/stream?after=`);
 * - `agui.unserved_reattach_*` / `ui.unserved_resume_*`: the same on a replica warmed first on
 *   another run (the "a replica that never served it", without the process's first
 *   request in the time); `*_lean_*`: the same through a raw socket instead of `fetch` (whose
 *   own time, in this process, is about a millisecond of it).
 *
 *   BENCH_DBS=sqlite,pg,mysql node --expose-gc --import=@poppinss/ts-exec bench/scale/reattach.ts
 *
 * One JSON object per line on stdout (`{ metric, db, x, xLabel, value, unit, load }`), anything
 * else on stderr. Only APIs main had before issue 26 (createRuntime, the Fetch handlers).
 */
import { createServer } from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Database } from '@adonisjs/lucid/database'
import { createRuntime } from '../../src/runtime.js'
import { createAgUiFetchHandler } from '../../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../../src/http/ui_message_fetch_handler.js'
import { frameRecord, type RowKind } from '../../src/store/rows.js'
import { DoorRunStore } from '../../src/store/door_runs.js'
import { tableNames } from '../../src/store/schema.js'
import { connectionConfig, createDatabase, resetTables } from '../../tests/helpers/db.js'
import { toNode } from '../../tests/helpers/fetch_node.js'
import { DBS, emit as emitRow, FULL, percentile, QUICK } from './common.js'

const SIZES = QUICK
  ? [1_000, 10_000]
  : FULL
    ? [1_000, 10_000, 100_000, 1_000_000]
    : [1_000, 10_000, 100_000]
/** `BENCH_STORED_EVERY=<rows>`: the AG-UI door's stored checkpoint spacing (default: the door's). */
const STORED_EVERY = Number(process.env.BENCH_STORED_EVERY ?? 0)
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? (QUICK ? 15 : 30))

const emit = (metric: string, db: string, x: number, value: number, unit: string) =>
  emitRow({ metric, db, x, xLabel: 'frames', value, unit })
const log = (...args: unknown[]) => console.error('[reattach]', ...args)

/** Row `seq` of the run: text, a tool call and its output, an event, then a component. */
function row(
  seq: number,
  frames: number
): { kind: RowKind; body: string; componentId?: string; superseded?: boolean } {
  const unit = Math.floor((seq - 1) / 5)
  switch (seq % 5) {
    case 1:
      return { kind: 'text', body: `Some text of unit ${unit}. ` }
    case 2:
      return {
        kind: 'event',
        body: JSON.stringify({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: `call_${unit}`,
            name: 'search',
            input: { q: unit },
            toolKind: 'read',
          },
        }),
      }
    case 3:
      return {
        kind: 'event',
        body: JSON.stringify({
          t: 'event',
          event: { kind: 'tool-output', id: `call_${unit}`, output: { ok: unit } },
        }),
      }
    case 4:
      return {
        kind: 'event',
        body: JSON.stringify({
          t: 'event',
          event: { kind: 'step-finish', usage: { outputTokens: 3 } },
        }),
      }
    default: {
      const replaced = unit % 10 === 0
      const id = replaced ? 'progress' : `card_${unit}`
      // The last `progress` row is the one not superseded.
      const lastUnit = Math.floor(frames / 5) - 1
      const lastReplaced = lastUnit - (lastUnit % 10)
      return {
        kind: 'component',
        body: JSON.stringify({ t: 'component', name: 'card', id, data: { unit } }),
        componentId: id,
        superseded: replaced && unit !== lastReplaced,
      }
    }
  }
}

/** A run of `frames` rows, open (its writer's lease held for an hour), with its AG-UI run row. */
async function seed(db: Database, id: string, frames: number) {
  const at = Date.now()
  const client = db.connection()
  await client.table('agent_streams').insert({
    run_id: id,
    last_seq: frames,
    rev: 1,
    status: 'open',
    lease_expires_at: at + 3_600_000,
    created_at: at,
    updated_at: at,
    ended_at: null,
  })
  let batch: object[] = []
  for (let seq = 1; seq <= frames; seq++) {
    const r = row(seq, frames)
    batch.push({ ...frameRecord(id, { seq, ...r }, null, at), superseded: r.superseded ?? false })
    if (batch.length === 500 || seq === frames) {
      await client.insertQuery().table('agent_stream_frames').multiInsert(batch)
      batch = []
    }
  }
  await new DoorRunStore(() => db.connection(), tableNames()).insert({
    runId: id,
    threadId: id,
    streamRunId: id,
    afterSeq: 0,
    kind: 'start',
    resumeHash: null,
    ownerId: null,
  })
}

const runner = {
  start: async () => ({ status: 'finished' as const }),
  resume: async () => ({ status: 'finished' as const }),
}

/** One HTTP server whose handler is swapped per replica. */
async function serve() {
  let handle: (request: Request) => Promise<Response> = async () =>
    new Response(null, { status: 503 })
  const server = createServer(toNode((request) => handle(request)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    use: (next: typeof handle) => (handle = next),
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A replica: a runtime with both Fetch handlers (AG-UI under /agui, useChat under /ui). */
function replica(db: Database) {
  const runtime = createRuntime(db, {
    runner,
    ...(STORED_EVERY ? { agui: { storedCheckpointEvery: STORED_EVERY } } : {}),
  })
  const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui' })
  const ui = createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/ui' })
  const handle = (request: Request) =>
    new URL(request.url).pathname.startsWith('/agui') ? agui(request) : ui(request)
  return { runtime, handle }
}

/**
 * Read an SSE response until `done(blocks, text)`; the blocks read. Cancelled then (the run is
 * open: the response would wait for more).
 */
async function read(response: Response, done: (block: string) => boolean) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let blocks = 0
  for (;;) {
    const chunk = await reader.read()
    if (chunk.done) break
    text += decoder.decode(chunk.value, { stream: true })
    let end: number
    let found = false
    while ((end = text.indexOf('\n\n')) !== -1) {
      const block = text.slice(0, end)
      text = text.slice(end + 2)
      if (!block.includes('data:')) continue
      blocks++
      if (done(block)) {
        found = true
        break
      }
    }
    if (found) break
  }
  await reader.cancel().catch(() => {})
  return blocks
}

/**
 * A lean client's GET of `path`: a raw TCP socket sends it and reads the response as latin1 text
 * until an SSE line `id: ` (the first event at or after the cursor: the prelude has none);
 * milliseconds from the connect to then. Refused (not 200): an error.
 */
function leanFirstEvent(url: string, path: string): Promise<number> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const start = performance.now()
    const socket = net.connect(Number(port), hostname)
    let text = ''
    let body = -1
    socket.setEncoding('latin1')
    socket.on('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`)
    })
    socket.on('data', (chunk: string) => {
      text += chunk
      if (body === -1) {
        const end = text.indexOf('\r\n\r\n')
        if (end === -1) return
        if (!text.startsWith('HTTP/1.1 200')) {
          socket.destroy()
          return reject(new Error(`lean client: ${text.slice(0, text.indexOf('\r\n'))}`))
        }
        body = end + 4
      }
      if (/\nid: /.test(text.slice(body - 1))) {
        resolve(performance.now() - start)
        socket.destroy()
      }
    })
    socket.on('error', reject)
  })
}

/** An SSE block with an `id:` (an event at or after the cursor: the prelude has none). */
const hasId = (block: string) => /(^|\n)id: /.test(block)

async function benchDb(dialect: string) {
  process.env.DB = dialect
  const db = createDatabase(connectionConfig(dialect as never))
  await resetTables(db)
  const http = await serve()
  // A short run of its own, which warms a replica before it re-attaches to the long one.
  const warmId = `bench-scale-${dialect}-warm-${Date.now()}`
  await seed(db, warmId, 20)
  try {
    for (const frames of SIZES) {
      const id = `bench-scale-${dialect}-${frames}-${Date.now()}`
      const t0 = performance.now()
      await seed(db, id, frames)
      log(dialect, frames, `seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
      // The last row's event carries the cursor `<frames>`.
      const last = new RegExp(`(^|\\n)id: ${frames}(\\n|$)`)
      const ended = (block: string) => last.test(block)

      // (c) The first replay on a replica, then the steady ones (best of two).
      const warm = replica(db)
      http.use(warm.handle)
      const replays: number[] = []
      for (let i = 0; i < 3; i++) {
        const start = performance.now()
        const events = await read(await fetch(`${http.url}/agui/runs/${id}`), ended)
        replays.push(events / ((performance.now() - start) / 1000))
      }
      emit('agui.first_replay_eps', dialect, frames, replays[0], 'events/s')
      emit('agui.steady_replay_eps', dialect, frames, Math.max(replays[1], replays[2]), 'events/s')
      // The useChat turn served whole too (its door's checkpoints are its own).
      const chunks: number[] = []
      for (let i = 0; i < 3; i++) {
        const start = performance.now()
        const count = await read(await fetch(`${http.url}/ui/chat/${id}/stream?after=0`), ended)
        chunks.push(count / ((performance.now() - start) / 1000))
      }
      emit('ui.first_replay_cps', dialect, frames, chunks[0], 'chunks/s')
      emit('ui.steady_replay_cps', dialect, frames, Math.max(chunks[1], chunks[2]), 'chunks/s')
      // Its stored checkpoints are written in the background.
      await new Promise((resolve) => setTimeout(resolve, 500))
      await warm.runtime.sink.shutdown()

      // (a), (b) Fresh replicas, random cursors (a whole row: not text, whose cursors have offsets).
      // `fresh_*`: the replica's first request; `unserved_*`: a replica warmed on another run
      // first (its pools, clock and code warm), which never served this one.
      const agui = (after: number) => `/agui/runs/${id}?after=${after}`
      const ui = (after: number) => `/ui/chat/${id}/stream?after=${after}`
      /** A metric, its path at a cursor, the warm-up path (none: fresh), the lean client. */
      type Case = [string, (after: number) => string, string | null, boolean]
      const unserved: Case[] = [
        ['agui.unserved_reattach', agui, `/agui/runs/${warmId}?after=3`, false],
        ['ui.unserved_resume', ui, `/ui/chat/${warmId}/stream?after=3`, false],
      ]
      const cases: Case[] = [
        ['agui.fresh_reattach', agui, null, false],
        ['ui.fresh_resume', ui, null, false],
        ...unserved,
        // The same through a lean client (a raw socket, as the viewers bench uses): the time
        // the replica takes, without `fetch`'s own (undici's, in this process, on these cores).
        ...unserved.map(([name, at, warmUp]): Case => [`${name}_lean`, at, warmUp, true]),
      ]
      for (const [metric, path, warmPath, lean] of cases) {
        const times: number[] = []
        for (let i = 0; i < SAMPLES; i++) {
          let after = 1 + Math.floor(Math.random() * (frames - 2))
          if (after % 5 === 1) after++
          const fresh = replica(db)
          http.use(fresh.handle)
          if (warmPath) {
            for (let k = 0; k < 3; k++) await read(await fetch(`${http.url}${warmPath}`), hasId)
          }
          if (lean) times.push(await leanFirstEvent(http.url, path(after)))
          else {
            const start = performance.now()
            const response = await fetch(`${http.url}${path(after)}`)
            if (response.status !== 200)
              throw new Error(`${metric}: ${response.status} ${await response.text()}`)
            await read(response, hasId)
            times.push(performance.now() - start)
          }
          await fresh.runtime.sink.shutdown()
        }
        emit(`${metric}_p50_ms`, dialect, frames, percentile(times, 50), 'ms')
        emit(`${metric}_p99_ms`, dialect, frames, percentile(times, 99), 'ms')
      }
      globalThis.gc?.()
    }
  } finally {
    await http.close()
    await db.manager.closeAll()
  }
}

for (const dialect of DBS) await benchDb(dialect)
