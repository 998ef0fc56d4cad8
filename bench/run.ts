/**
 * `npm run bench`: this package's sink side by side with the polling baseline (the incumbent's
 * documented algorithm, bench/baseline.ts) on the same tables, same machine, same run.
 * Prints a Markdown table. BENCH_DBS=pg,sqlite,mysql picks databases; BENCH_QUICK=1 shrinks every
 * measurement (a smoke run for CI; its numbers are noisier). The databases are the test suite's
 * (tests/helpers/db.ts): PG_DATABASE / MYSQL_DATABASE (default `test`), PG_HOST, MYSQL_HOST, ...
 * The Redis notifier rows use REDIS_URL (default redis://127.0.0.1:6379), on channels under
 * REDIS_PREFIX (default `agent_stream_bench:`); without a reachable Redis they print n/a.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { cpus, totalmem } from 'node:os'
import { mkdirSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Database } from '@adonisjs/lucid/database'
import { Redis } from 'ioredis'
import { LucidTokenStreamSink, sinkInternals } from '../src/sink/lucid_sink.js'
import { notifiers } from '../src/follow/notifiers/index.js'
import { RedisNotifier } from '../src/follow/notifiers/redis.js'
import { formatCursor, parseCursor } from '../src/core/cursor.js'
import { baselineReader, BaselineWriter, now } from './baseline.js'
import { instrumentCommits, percentile, play, type Plan } from './script.js'
import { benchUiMessage } from './ui_message.js'

const QUICK = process.env.BENCH_QUICK === '1'
/**
 * `BENCH_ONLY=<part>` runs one part alone: `db` (the sink, AG-UI and useChat rows per database),
 * `usechat` (the useChat rows alone), `viewers` (many talking runs, many viewers), `admin` (the
 * admin queue), `resumable` (the `resumable-stream` rows), `stop` (stop latency across processes,
 * bench/stop.ts), `ds` (Durable Streams beside the reference server, bench/ds_section.ts), `otel`
 * (the cost of an OpenTelemetry SDK on the hot path, on the first of BENCH_DBS: bench/otel_section.ts),
 * `scale` (the curves at growing run lengths, runs and viewers, before and after in one run:
 * bench/scale/compare.ts). Unset: every part.
 */
const ONLY = process.env.BENCH_ONLY
const wants = (
  part: 'db' | 'usechat' | 'viewers' | 'admin' | 'resumable' | 'stop' | 'ds' | 'otel' | 'scale'
) => !ONLY || ONLY === part
const DBS = (process.env.BENCH_DBS ?? 'pg,sqlite,mysql').split(',').map((s) => s.trim())
/** A dialect's name in the table. */
const labelOf = (dialect: string) =>
  ({ pg: 'PostgreSQL', sqlite: 'SQLite', mysql: 'MariaDB' })[dialect] ?? dialect
const TMP = new URL('./tmp/', import.meta.url)
mkdirSync(TMP, { recursive: true })
process.env.SQLITE_FILE = fileURLToPath(new URL('bench.sqlite3', TMP))

const { createDatabase, resetTables } = await import('../tests/helpers/db.js')
const { seedStream } = await import('../tests/helpers/seed.js')

const SIZES = QUICK
  ? {
      tokens: 200,
      frames: 40,
      readsTokens: 100,
      viewers: [1, 10, 100],
      replay: 2000,
      reattach: 40,
      coldReattach: 10,
      idle: 200,
      stops: 10,
      stopReaders: 3,
    }
  : {
      tokens: 1000,
      frames: 200,
      readsTokens: 300,
      viewers: [1, 10, 100],
      replay: 10_000,
      reattach: 200,
      coldReattach: 40,
      idle: 1000,
      stops: 100,
      stopReaders: 10,
    }

const step = (what: string) => process.stderr.write(`  ${what}\n`)
type Row = { metric: string; db: string; ours: string; baseline: string; target: string }
const rows: Row[] = []
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a')
let seq = 0
const runId = (tag: string) => `bench-${tag}-${process.pid}-${++seq}`

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const REDIS_PREFIX = process.env.REDIS_PREFIX ?? 'agent_stream_bench:'

/** Whether Redis answers (the Redis notifier rows need it). */
async function redisUp() {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null })
  probe.on('error', () => {})
  try {
    await probe.connect()
    await probe.ping()
    return true
  } catch {
    return false
  } finally {
    probe.disconnect()
  }
}

/** The other replica, a second Node process; `redis`: it publishes on this Redis channel. */
async function startWriter(dialect: string, options: object = {}, redis?: { channel: string }) {
  const child = fork(fileURLToPath(new URL('./writer_process.ts', import.meta.url)), [], {
    execArgv: ['--import=@poppinss/ts-exec'],
    env: {
      ...process.env,
      DB: dialect,
      SINK_OPTIONS: JSON.stringify(options),
      REDIS_NOTIFIER: redis ? JSON.stringify(redis) : '',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await new Promise((resolve) => child.once('message', resolve))
  return child
}
function call(child: ChildProcess, command: object): Promise<any> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: any) =>
      message.ok ? resolve(message) : reject(new Error(message.error))
    )
    child.send(command)
  })
}

/** Our reader: arrival time of each cursor, and the text length received by then. */
async function readOurs(sink: LucidTokenStreamSink, id: string) {
  const arrivals: { cursor: string; at: number; textEnd: number }[] = []
  let text = 0
  for await (const frame of sink.subscribe(id)) {
    if (frame.t === 'text') text += frame.v.length
    arrivals.push({ cursor: frame.cursor, at: now(), textEnd: text })
  }
  return arrivals
}

/** The baseline reader, as arrivals keyed like ours (`<seq>`). */
function readBaseline(db: Database, id: string) {
  const arrivals: { cursor: string; at: number; textEnd: number }[] = []
  let text = 0
  const reader = baselineReader(db.connection(), id, (row, at) => {
    if (row.kind === 'text') text += row.body.length
    arrivals.push({ cursor: `${row.seq}`, at, textEnd: text })
  })
  return { reader, arrivals }
}

/** Per token: time from its write() call to a reader holding all text up to its end. */
function textLatencies(
  calls: { textEnd: number; at: number }[],
  arrivals: { at: number; textEnd: number }[]
) {
  const out: number[] = []
  let j = 0
  for (const written of calls) {
    while (j < arrivals.length && arrivals[j].textEnd < written.textEnd) j++
    if (j < arrivals.length) out.push(arrivals[j].at - written.at)
  }
  return out
}

function commitLatencies(commits: Map<string, number>, arrivals: { cursor: string; at: number }[]) {
  const out: number[] = []
  for (const arrival of arrivals) {
    const at = commits.get(arrival.cursor)
    if (at !== undefined) out.push(arrival.at - at)
  }
  return out
}

async function countTextRows(db: Database, id: string) {
  const row = await db
    .connection()
    .from('agent_stream_frames')
    .where('run_id', id)
    .where('kind', 'text')
    .count('* as n')
    .first()
  return Number(row.n)
}

async function benchDatabase(dialect: string) {
  process.env.DB = dialect
  const db = createDatabase()
  await resetTables(db)
  const label = labelOf(dialect)
  const sink = new LucidTokenStreamSink(db, { coalesceWindowMs: 40 })
  const committed = instrumentCommits(sink)

  step('rows')
  // 1. Rows per 1,000 tokens at 100 tokens/s, and mid-message text latency (same replica).
  {
    const plan: Plan = { tokens: SIZES.tokens, intervalMs: 10, eventEvery: 0 }
    const id = runId('rows')
    const writer = await sink.open(id)
    const reading = readOurs(sink, id)
    const writes = committed.size
    committed.clear()
    const calls = await play(writer, plan)
    const arrivals = await reading
    const ourRows = ((await countTextRows(db, id)) / plan.tokens) * 1000
    const ourWrites = (committed.size / plan.tokens) * 1000
    void writes
    const ourLatency = textLatencies(calls, arrivals)

    const bid = runId('rows-base')
    const { reader, arrivals: baseArrivals } = readBaseline(db, bid)
    const baseWriter = new BaselineWriter(db.connection(), bid)
    const baseCalls = await play(baseWriter, plan)
    await reader.done
    const baseRows = ((await countTextRows(db, bid)) / plan.tokens) * 1000
    const baseLatency = textLatencies(baseCalls, baseArrivals)
    rows.push({
      metric: 'rows per 1,000 tokens at 100 tokens/s',
      db: label,
      ours: fmt(ourRows, 0),
      baseline: fmt(baseRows, 0),
      target: '<= 60',
    })
    rows.push({
      metric: 'write transactions per 1,000 tokens',
      db: label,
      ours: fmt(ourWrites, 0),
      baseline: fmt(baseRows, 0),
      target: '(reported)',
    })
    rows.push({
      metric: 'mid-message text: write() -> reader, p50 / p99 ms',
      db: label,
      ours: `${fmt(percentile(ourLatency, 50))} / ${fmt(percentile(ourLatency, 99))}`,
      baseline: `${fmt(percentile(baseLatency, 50))} / ${fmt(percentile(baseLatency, 99))}`,
      target: '<= window (40 ms)',
    })
  }

  step('same-replica latency')
  // 2. Frame committed -> reader, same replica: non-text frames and first texts of messages.
  {
    const plan: Plan = { tokens: SIZES.frames, intervalMs: 20, eventEvery: 1 }
    const id = runId('lat')
    const writer = await sink.open(id)
    const reading = readOurs(sink, id)
    committed.clear()
    await play(writer, plan)
    const ours = commitLatencies(committed, await reading)

    const bid = runId('lat-base')
    const { reader, arrivals } = readBaseline(db, bid)
    const baseWriter = new BaselineWriter(db.connection(), bid)
    await play(baseWriter, plan)
    await reader.done
    const base = commitLatencies(
      new Map([...baseWriter.committedAt].map(([s, t]) => [`${s}`, t])),
      arrivals
    )
    rows.push({
      metric: 'frame committed -> reader, same replica, p50 / p99 ms',
      db: label,
      ours: `${fmt(percentile(ours, 50), 2)} / ${fmt(percentile(ours, 99), 2)}`,
      baseline: `${fmt(percentile(base, 50))} / ${fmt(percentile(base, 99))}`,
      target: 'p50 <= 2',
    })
  }

  step('cross-process latency')
  // 3. The same from another process (another replica).
  const child = await startWriter(dialect, { coalesceWindowMs: 40 })
  {
    const plan: Plan = { tokens: SIZES.frames, intervalMs: 20, eventEvery: 1 }
    const id = runId('xlat')
    await call(child, { op: 'open', runId: id })
    const reading = readOurs(sink, id)
    const { commits } = await call(child, { op: 'ours', runId: id, plan })
    const ours = commitLatencies(new Map(commits), await reading)

    const bid = runId('xlat-base')
    const { reader, arrivals } = readBaseline(db, bid)
    const base = await call(child, { op: 'baseline', runId: bid, plan })
    await reader.done
    const baseLat = commitLatencies(new Map(base.commits), arrivals)
    rows.push({
      metric: 'frame committed -> reader, other process, p50 / p99 ms',
      db: label,
      ours: `${fmt(percentile(ours, 50), 2)} / ${fmt(percentile(ours, 99), 2)}`,
      baseline: `${fmt(percentile(baseLat, 50))} / ${fmt(percentile(baseLat, 99))}`,
      target: dialect === 'pg' ? 'p50 <= 3' : '(polling: <= poll interval)',
    })
  }

  step('cross-process latency, Redis notifier')
  // 3b. The same, both replicas woken through Redis (notifiers.redis()) instead of the poll.
  if (await redisUp()) {
    const channel = `${REDIS_PREFIX}xlat:${process.pid}:${dialect}`
    const client = new Redis(REDIS_URL)
    const redisSink = new LucidTokenStreamSink(db, {
      coalesceWindowMs: 40,
      notifier: notifiers.redis({ client, channel }),
    })
    const writer = await startWriter(dialect, { coalesceWindowMs: 40 }, { channel })
    const plan: Plan = { tokens: SIZES.frames, intervalMs: 20, eventEvery: 1 }
    const id = runId('xlat-redis')
    await call(writer, { op: 'open', runId: id })
    const reading = readOurs(redisSink, id)
    const subscriber = sinkInternals(redisSink).tail.notifiers.find(
      (n) => n instanceof RedisNotifier
    )
    while (!(subscriber as RedisNotifier).listening) await new Promise((r) => setTimeout(r, 10))
    const { commits } = await call(writer, { op: 'ours', runId: id, plan })
    const ours = commitLatencies(new Map(commits), await reading)
    rows.push({
      metric: 'frame committed -> reader, other process, Redis notifier, p50 / p99 ms',
      db: label,
      ours: `${fmt(percentile(ours, 50), 2)} / ${fmt(percentile(ours, 99), 2)}`,
      baseline: 'n/a',
      target: 'p50 <= 3',
    })
    writer.send({ op: 'exit' })
    await new Promise((resolve) => writer.once('exit', resolve))
    await redisSink.shutdown()
    client.disconnect()
  } else {
    rows.push({
      metric: 'frame committed -> reader, other process, Redis notifier, p50 / p99 ms',
      db: label,
      ours: 'n/a (no Redis)',
      baseline: 'n/a',
      target: 'p50 <= 3',
    })
  }

  step('reads per second')
  // 4. Database reads per second by the reading replica, V readers of one talking run.
  {
    const plan: Plan = { tokens: SIZES.readsTokens, intervalMs: 10, eventEvery: 10 }
    const counts: string[] = []
    const baseCounts: string[] = []
    for (const viewers of SIZES.viewers) {
      const readDb = createDatabase()
      const readSink = new LucidTokenStreamSink(readDb, { coalesceWindowMs: 40 })
      let selects = 0
      readDb
        .connection()
        .getReadClient()
        .on('query', (q: { sql: string }) => {
          if (/^\s*select/i.test(q.sql)) selects++
        })
      const id = runId('reads')
      await call(child, { op: 'open', runId: id })
      const readers = Array.from({ length: viewers }, () => readOurs(readSink, id))
      await new Promise((resolve) => setTimeout(resolve, 100))
      selects = 0
      const started = now()
      await call(child, { op: 'ours', runId: id, plan })
      await Promise.all(readers)
      counts.push(fmt(selects / ((now() - started) / 1000), 0))
      await readSink.shutdown()

      const bid = runId('reads-base')
      const polling = Array.from({ length: viewers }, () => readBaseline(readDb, bid))
      selects = 0
      const baseStarted = now()
      await call(child, { op: 'baseline', runId: bid, plan })
      await Promise.all(polling.map((p) => p.reader.done))
      baseCounts.push(fmt(selects / ((now() - baseStarted) / 1000), 0))
      await readDb.manager.closeAll()
    }
    rows.push({
      metric: `database reads/s, ${SIZES.viewers.join(' / ')} readers of one run`,
      db: label,
      ours: counts.join(' / '),
      baseline: baseCounts.join(' / '),
      target: 'independent of readers',
    })
  }
  child.send({ op: 'exit' })
  await new Promise((resolve) => child.once('exit', resolve))

  step('replay')
  // 5. Replay of a stored run, and re-attach -> first frame.
  {
    const id = runId('replay')
    await seedStream(db, id, SIZES.replay, true)
    const started = now()
    let events = 0
    let bytes = 0
    for await (const frame of sink.subscribe(id)) {
      const { cursor, ...body } = frame
      bytes += `id: ${cursor}\nevent: ${frame.t}\ndata: ${JSON.stringify(body)}\n\n`.length
      events++
    }
    const seconds = (now() - started) / 1000
    rows.push({
      metric: `replay of a ${SIZES.replay.toLocaleString('en')}-frame run as native SSE, frames/s`,
      db: label,
      ours: fmt(events / seconds, 0),
      baseline: 'n/a',
      target: '(sink level)',
    })
    void bytes

    const latencies: number[] = []
    for (let i = 0; i < SIZES.reattach; i++) {
      const after = formatCursor(
        parseCursor(String(1 + Math.floor(Math.random() * (SIZES.replay - 1))))
      )
      const t0 = now()
      const iterator = sink.subscribe(id, { after })[Symbol.asyncIterator]()
      await iterator.next()
      latencies.push(now() - t0)
      await iterator.return?.()
    }
    rows.push({
      metric: 're-attach with a cursor -> first frame (sink), p50 / p99 ms',
      db: label,
      ours: `${fmt(percentile(latencies, 50), 2)} / ${fmt(percentile(latencies, 99), 2)}`,
      baseline: 'n/a',
      target: '(sink level)',
    })

    step('agui')
    // 6. The same run through the AG-UI door over loopback HTTP: replay throughput, re-attach.
    const http = await serveDoor(db, sink, id)
    // The first replay is also the process's first use of the door (its code not yet
    // optimized): reported beside the steady state, the median of the next five.
    const rates: number[] = []
    let aguiEvents = 0
    for (let round = 0; round < 6; round++) {
      const t0 = now()
      const replayed = await fetch(`${http.url}/${id}`)
      const body = await replayed.text()
      const replaySeconds = (now() - t0) / 1000
      aguiEvents = body.split('\n\n').filter((block) => block.includes('data: ')).length
      rates.push(aguiEvents / replaySeconds)
    }
    rows.push({
      metric: `replay of the same run as AG-UI SSE over HTTP, events/s (${aguiEvents} events; median of 5 after a first, cold one)`,
      db: label,
      ours: `${fmt(percentile(rates.slice(1), 50), 0)} (first: ${fmt(rates[0], 0)})`,
      baseline: 'n/a',
      target: '>= 100,000',
    })
    const firsts: number[] = []
    for (let i = 0; i < SIZES.reattach; i++) firsts.push(await reattachOnce(http.url, id))
    rows.push({
      metric: 're-attach over HTTP (AG-UI, random cursor) -> first new event, p50 / p99 ms',
      db: label,
      ours: `${fmt(percentile(firsts, 50), 2)} / ${fmt(percentile(firsts, 99), 2)}`,
      baseline: 'n/a',
      target: 'p50 <= 5, p99 <= 20',
    })
    // The replays above left stored checkpoints (every DEFAULTS.storedCheckpointEvery rows),
    // written in the background: wait for them.
    await http.door.checkpointWrites()
    await http.close()
    // A replica that never served the run (just started, or another one behind the balancer):
    // no checkpoint in its memory, so its first re-attach starts from the nearest stored one
    // (BENCH_STORED_CHECKPOINTS=0: none, it replays the run up to the cursor).
    const noStored = process.env.BENCH_STORED_CHECKPOINTS === '0'
    const stored = noStored ? { storedCheckpointEvery: 0 } : {}
    const colds: number[] = []
    for (let i = 0; i < SIZES.coldReattach; i++) {
      const fresh = await serveDoor(db, sink, id, false, stored)
      colds.push(await reattachOnce(fresh.url, id))
      await fresh.close()
    }
    rows.push({
      metric: `same, first re-attach on a replica that never served the run (no checkpoint in memory; ${noStored ? 'stored ones off: the run replayed up to the cursor' : 'from a stored one'}), p50 / p99 ms`,
      db: label,
      ours: `${fmt(percentile(colds, 50), 2)} / ${fmt(percentile(colds, 99), 2)}`,
      baseline: 'n/a',
      target: '(reported)',
    })
  }

  step('useChat')
  // 7. The same kind of turn through the UI message stream door, beside resumable-stream.
  rows.push(...(await useChatRows(db, label)))

  await sink.shutdown()
  await db.manager.closeAll()
}

/**
 * One AG-UI re-attach at a random cursor of the stored run: request -> the first event after the
 * join prelude (a frame the client did not have), in milliseconds.
 */
async function reattachOnce(url: string, id: string) {
  const after = String(1 + Math.floor(Math.random() * (SIZES.replay - 1)))
  const t = now()
  const response = await fetch(`${url}/${id}?after=${after}`)
  const reader = response.body!.getReader()
  let text = ''
  while (!/"type":"(TOOL_CALL|TEXT_MESSAGE)_[A-Z]+"/.test(text)) {
    const chunk = await reader.read()
    if (chunk.done) break
    text += new TextDecoder().decode(chunk.value)
  }
  const took = now() - t
  await reader.cancel()
  return took
}

/**
 * The AG-UI door on a bare node:http server (no framework around it): GET /<runId>?after= is
 * the re-attach route's work (door + SSE writer). A new door each time: a replica of its own,
 * with nothing in memory. `insertRun`: store the AG-UI run's row (once per run).
 */
async function serveDoor(
  db: Database,
  sink: LucidTokenStreamSink,
  streamRunId: string,
  insertRun = true,
  options: { storedCheckpointEvery?: number } = {}
) {
  const { createRuntime } = await import('../src/runtime.js')
  const { DoorRunStore } = await import('../src/store/door_runs.js')
  const { AgUiDoor } = await import('../src/agui/door/door.js')
  const { tableNames } = await import('../src/store/schema.js')
  const { serveReattach } = await import('./serve_reattach.js')
  const stack = createRuntime(db, {
    runner: {
      start: async () => ({ status: 'finished' }),
      resume: async () => ({ status: 'finished' }),
    },
  })
  const runs = new DoorRunStore(() => db.connection(), tableNames())
  if (insertRun)
    await runs.insert({
      runId: streamRunId,
      threadId: streamRunId,
      streamRunId,
      afterSeq: 0,
      kind: 'start',
      resumeHash: null,
      ownerId: null,
    })
  const door = new AgUiDoor(
    { sink, driver: stack.driver, parking: stack.parking, runs, queue: stack.queue },
    options
  )
  const served = await serveReattach(door)
  return {
    url: served.url,
    door,
    close: async () => {
      await served.close()
      await stack.sink.shutdown()
    },
  }
}

/** Heap per idle reader: readers waiting on open, silent streams (10 per stream). */
async function benchMemory(dialect: string) {
  process.env.DB = dialect
  const db = createDatabase()
  await resetTables(db)
  const sink = new LucidTokenStreamSink(db)
  const gc = () => {
    for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.()
  }
  const streams = SIZES.idle / 10
  const ids = Array.from({ length: streams }, () => runId('idle'))
  for (const id of ids) await sink.open(id)
  // Warm every code path once, so what is measured is the readers themselves.
  const warm = sink.subscribe(ids[0])[Symbol.asyncIterator]()
  const warmed = warm.next()
  await new Promise((resolve) => setTimeout(resolve, 200))
  gc()
  const before = process.memoryUsage().heapUsed
  const iterators = ids.flatMap((id) =>
    Array.from({ length: 10 }, () => sink.subscribe(id)[Symbol.asyncIterator]())
  )
  const pending = iterators.map((it) => it.next())
  await new Promise((resolve) => setTimeout(resolve, 500))
  gc()
  const perReader = (process.memoryUsage().heapUsed - before) / iterators.length
  rows.push({
    metric: `heap per idle reader (${SIZES.idle} readers, ${streams} streams), bytes`,
    db: labelOf(dialect),
    ours: fmt(perReader, 0),
    baseline: 'n/a',
    target: 'bounded, reported',
  })
  void pending
  void warmed
  await sink.shutdown()
  await db.manager.closeAll()
}

/** `BENCH_VIEWERS=runs,viewersPerRun,seconds` overrides the many-viewers sizes (a smaller variant). */
const viewersSize = process.env.BENCH_VIEWERS?.split(',').map(Number)
const VIEWERS = viewersSize
  ? {
      runs: viewersSize[0],
      viewersPerRun: viewersSize[1],
      tokensPerSecond: 30,
      seconds: viewersSize[2] ?? 10,
    }
  : QUICK
    ? { runs: 10, viewersPerRun: 3, tokensPerSecond: 30, seconds: 2 }
    : { runs: 100, viewersPerRun: 10, tokensPerSecond: 30, seconds: 10 }

/** Many talking runs, many viewers over HTTP: one replica, and two replicas on PostgreSQL. */
async function benchManyViewers(dialect: string) {
  const { benchViewers } = await import('./viewers.js')
  const label = labelOf(dialect)
  const scenario = `${VIEWERS.runs} runs x ${VIEWERS.viewersPerRun} SSE viewers (AG-UI over HTTP), ${VIEWERS.tokensPerSecond} tokens/s`
  const counts = process.env.BENCH_REPLICAS ? [Number(process.env.BENCH_REPLICAS)] : null
  for (const replicas of counts ?? (dialect === 'pg' ? [1, 2] : [1])) {
    const where = replicas === 1 ? 'one replica' : 'two replicas'
    const result = await benchViewers(dialect, { ...VIEWERS, replicas }, `${dialect}${replicas}`)
    const each = (f: (r: (typeof result.replicas)[number]) => number, digits = 0) =>
      result.replicas.map((r) => fmt(f(r), digits)).join(' + ')
    rows.push({
      metric: `${scenario}, ${where}: write -> viewer p50 / p99 ms (deliveries, missing)`,
      db: label,
      ours: `${fmt(result.p50)} / ${fmt(result.p99)} (${result.deliveries}, ${result.missing})`,
      baseline: 'n/a',
      target: 'p99 <= 100',
    })
    rows.push({
      metric: `same, ${where}: CPU % of a core, RSS MiB, transactions/s, reads/s (per replica)`,
      db: label,
      ours: `${each((r) => r.cpuPercent)} %, ${each((r) => r.rssMiB)} MiB, ${each((r) => r.transactionsPerSecond)} tx/s, ${each((r) => r.readsPerSecond)} reads/s`,
      baseline: 'n/a',
      target: 'reads/s independent of viewers',
    })
  }
}

/** resumable-stream's p50 and p99 (ms): same process, other process, resume -> first chunk. */
let sideBySide: number[][] | null = null

/**
 * The side-by-side table: resumable-stream's latencies beside ours from the rows above (same
 * run), with the ratio of the p50s (how many times faster ours is; below 1: slower).
 */
function printSideBySide() {
  if (!sideBySide) return
  const dbs = [...new Set(rows.filter((row) => row.db !== 'Redis').map((row) => row.db))]
  const ours = (prefix: string, db: string) => {
    const row = rows.find((r) => r.metric.startsWith(prefix) && r.db === db)
    const match = row && /^([\d.]+) \/ ([\d.]+)/.exec(row.ours)
    return match ? [Number(match[1]), Number(match[2])] : null
  }
  const cell = (value: number[] | null, reference: number[]) =>
    value
      ? `${fmt(value[0], 2)} / ${fmt(value[1], 2)} (x${fmt(reference[0] / value[0], 1)})`
      : 'n/a'
  const lines: [string, number, string[]][] = [
    [
      'written -> reader, same process (ours: same replica)',
      0,
      ['frame committed -> reader, same replica'],
    ],
    [
      'written -> reader, other process (ours: Redis notifier)',
      1,
      ['frame committed -> reader, other process, Redis notifier'],
    ],
    [
      'written -> reader, other process (ours: the default notifier)',
      1,
      ['frame committed -> reader, other process, p50'],
    ],
    [
      `resume at a random point of a ${SIZES.replay.toLocaleString('en')}-long stream -> first (ours: sink)`,
      2,
      ['re-attach with a cursor'],
    ],
    ['same (ours: AG-UI over HTTP, with the prelude)', 2, ['re-attach over HTTP']],
  ]
  console.log(
    `\nSide by side with resumable-stream (same run, same machine; p50 / p99 ms, (xN): resumable-stream's p50 / ours)\n`
  )
  console.log(`| measurement | resumable-stream | ${dbs.map((db) => `ours, ${db}`).join(' | ')} |`)
  console.log(`| --- | --- | ${dbs.map(() => '---').join(' | ')} |`)
  for (const [name, i, [prefix]] of lines) {
    const reference = sideBySide[i]
    const cells = dbs.map((db) => cell(ours(prefix, db), reference))
    console.log(
      `| ${name} | ${fmt(reference[0], 2)} / ${fmt(reference[1], 2)} | ${cells.join(' | ')} |`
    )
  }
}

/**
 * `resumable-stream` (bench/resumable.ts) on the same Redis: the same measurements as our
 * same-replica, cross-process and re-attach rows, for the side by side.
 */
async function benchResumableStream() {
  const metric = (what: string) => `resumable-stream (Redis, not durable): ${what}`
  const names = [
    metric('chunk written -> reader, same process, p50 / p99 ms'),
    metric('chunk written -> reader, other process, p50 / p99 ms'),
    metric(
      `resume at a random point of a ${SIZES.replay.toLocaleString('en')}-chunk stream -> first chunk, p50 / p99 ms`
    ),
  ]
  if (!(await redisUp())) {
    for (const name of names)
      rows.push({
        metric: name,
        db: 'Redis',
        ours: 'n/a (no Redis)',
        baseline: 'n/a',
        target: '(reference)',
      })
    return
  }
  const { benchResumable, p50p99 } = await import('./resumable.js')
  let result: Awaited<ReturnType<typeof benchResumable>>
  try {
    result = await benchResumable(REDIS_URL, SIZES)
  } catch (error) {
    // Its resume gives up after 1 s without the producer's answer (a loaded machine).
    for (const name of names) {
      const ours = `n/a (${(error as Error).message})`
      rows.push({ metric: name, db: 'Redis', ours, baseline: 'n/a', target: '(reference)' })
    }
    return
  }
  const values = [result.sameProcess, result.otherProcess, result.resume]
  sideBySide = values.map((v) => [percentile(v, 50), percentile(v, 99)])
  if (result.failed > 0) names[2] += ` (${result.failed} of ${SIZES.reattach} timed out)`
  names.forEach((name, i) =>
    rows.push({
      metric: name,
      db: 'Redis',
      ours: p50p99(values[i]),
      baseline: 'n/a',
      target: '(reference)',
    })
  )
}

const ADMIN = QUICK ? { items: 10_000, requests: 5 } : { items: 10_000, requests: 50 }

/** The admin console's queue with 10,000 pending items: its first page (bench/admin_queue.ts). */
async function benchAdmin(dialect: string) {
  const { benchAdminQueue } = await import('./admin_queue.js')
  const label = labelOf(dialect)
  const result = await benchAdminQueue(dialect, ADMIN)
  rows.push({
    metric: `admin queue, ${ADMIN.items} pending items: first page (${result.rowsShown} rows, counts per filter), server time p50 / p99 ms (loopback round trip p50)`,
    db: label,
    ours: `${fmt(result.p50)} / ${fmt(result.p99)} (${fmt(result.roundTripP50)})`,
    baseline: 'n/a',
    target: '< 100',
  })
}

/** The useChat rows (bench/ui_message.ts) on `db`, beside resumable-stream when Redis is up. */
async function useChatRows(db: ReturnType<typeof createDatabase>, label: string) {
  return benchUiMessage(db, {
    label,
    frames: SIZES.replay,
    resumes: SIZES.reattach,
    redisUrl: REDIS_URL,
    redisPrefix: REDIS_PREFIX,
    redis: await redisUp(),
  })
}

/** The useChat rows alone (`BENCH_ONLY=usechat`), on a fresh database. */
async function benchUseChatOnly(dialect: string) {
  process.env.DB = dialect
  const db = createDatabase()
  await resetTables(db)
  const label = labelOf(dialect)
  rows.push(...(await useChatRows(db, label)))
  await db.manager.closeAll()
}

const started = Date.now()
if (wants('db')) await benchMemory(DBS[0])
for (const dialect of DBS) {
  process.stderr.write(`bench: ${dialect}...\n`)
  if (wants('db')) await benchDatabase(dialect)
  if (ONLY === 'usechat') await benchUseChatOnly(dialect)
  if (wants('viewers')) {
    step('many viewers')
    await benchManyViewers(dialect)
  }
  if (wants('admin')) {
    step('admin queue')
    await benchAdmin(dialect)
  }
  if (wants('stop')) {
    step('stop')
    const { benchStop } = await import('./stop.js')
    rows.push(
      ...(await benchStop(dialect, {
        label: labelOf(dialect),
        stops: SIZES.stops,
        readers: SIZES.stopReaders,
        redisUrl: REDIS_URL,
        redisPrefix: REDIS_PREFIX,
        redis: await redisUp(),
      }))
    )
  }
}
if (wants('resumable')) {
  process.stderr.write('bench: resumable-stream...\n')
  await benchResumableStream()
}
let printDurableStreams: (() => void) | null = null
if (wants('ds')) {
  const { benchDurableStreamsSection } = await import('./ds_section.js')
  const order = ['sqlite', 'pg', 'mysql'].filter((dialect) => DBS.includes(dialect))
  printDurableStreams = await benchDurableStreamsSection(
    order.map((dialect) => ({ dialect, label: labelOf(dialect) })),
    QUICK
  )
}
let printOtel: (() => void) | null = null
if (wants('otel')) {
  process.stderr.write(`bench: the cost of telemetry on ${DBS[0]}...\n`)
  const { benchOtelSection } = await import('./otel_section.js')
  const database = { create: createDatabase, reset: resetTables }
  printOtel = await benchOtelSection(DBS[0], labelOf(DBS[0]), QUICK, database, seedStream)
}
let printScale: (() => void) | null = null
if (wants('scale')) {
  const { benchScaleSection } = await import('./scale/compare.js')
  // The quick pass (CI) measures the curves on SQLite alone, this tree only.
  printScale = await benchScaleSection(QUICK ? ['sqlite'] : DBS, QUICK)
}
rmSync(TMP, { recursive: true, force: true })

const cpu = cpus()[0]?.model ?? 'unknown CPU'
console.log(`\nadonis-agent-stream benchmark${QUICK ? ' (QUICK: smoke sizes, noisy)' : ''}`)
console.log(
  `machine: ${cpus().length} x ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${((Date.now() - started) / 1000).toFixed(0)} s`
)
console.log(
  'ours: coalescing window 40 ms, one tail reader per replica (NOTIFY on PostgreSQL, 100 ms poll elsewhere; the Redis notifier rows: notifiers.redis() on both replicas, 1 s safety-net poll); baseline: 50 ms flush, one 250 ms poll per reader\n'
)
console.log('| metric | database | ours | polling baseline | target |')
console.log('| --- | --- | --- | --- | --- |')
for (const row of rows)
  console.log(`| ${row.metric} | ${row.db} | ${row.ours} | ${row.baseline} | ${row.target} |`)
printSideBySide()
printDurableStreams?.()
printOtel?.()
printScale?.()
process.exit(0)
