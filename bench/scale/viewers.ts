/**
 * Issue 26, viewers per replica: two curves on ONE replica (a child process: the viewers run
 * in this process, so the replica's CPU is what is measured).
 *
 * - `talking`: R talking runs x 10 SSE viewers each, 30 tokens/s: missing deliveries and
 *   write -> viewer p50/p99 (R = 50/100/200/400/800; QUICK: 50/100);
 * - `one run`: V viewers of one talking run: p99, the replica's database reads/s and its
 *   event-loop lag p99 (V = 1/100/1000/5000; QUICK: 1/100).
 *
 * Only APIs main already had: createRuntime, the door's `reattach`, `serveAgUiEvents`, HTTP.
 * The replica's server listens with a backlog of 4096 (node's default is 511: a storm of
 * viewers attaching at once overflows it, see docs/operations.md).
 *
 *   BENCH_DBS=sqlite,pg,mysql node --expose-gc --import=@poppinss/ts-exec bench/scale/viewers.ts
 */
import { fork, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { DBS, emit as emitRow, percentile, QUICK } from './common.js'

const at = () => performance.timeOrigin + performance.now()
const SECONDS = QUICK ? 3 : 6
const TOKENS_PER_SECOND = 30

// ---------------------------------------------------------------- the replica (child process)
async function replica() {
  const { createRuntime } = await import('../../src/runtime.js')
  const { serveAgUiEvents } = await import('../../src/http/sse.js')
  const { createDatabase } = await import('../../tests/helpers/db.js')
  const db = createDatabase()
  const runtime = createRuntime(db, {
    runner: {
      start: async () => ({ status: 'finished' }),
      resume: async () => ({ status: 'finished' }),
    },
  } as any)
  const { sink, door } = runtime as any
  let reads = 0
  const tally = new Map<string, number>()
  for (const client of new Set([
    db.connection().getReadClient(),
    db.connection().getWriteClient(),
  ])) {
    client.on('query', (q: { sql: string }) => {
      if (/^\s*select/i.test(q.sql) && !/^\s*select pg_notify/i.test(q.sql)) {
        reads++
        if (process.env.BENCH_SQL_TALLY) tally.set(q.sql, (tally.get(q.sql) ?? 0) + 1)
      }
    })
  }
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x')
    const controller = new AbortController()
    try {
      const reply = await door.reattach(url.pathname.slice(1), undefined, null, controller.signal)
      if (reply.kind === 'refused') return res.writeHead(reply.status).end()
      await serveAgUiEvents(req, res, reply.events, { controller })
    } catch (error) {
      console.error('replica: attach failed', (error as Error).message)
      if (!res.headersSent) res.writeHead(500).end()
      else res.destroy()
    }
  })
  server.maxHeadersCount = 100
  // BENCH_BACKLOG: the listen backlog (node's default 511 drops a storm's SYNs: see the head).
  const backlog = Number(process.env.BENCH_BACKLOG ?? 4096)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', backlog, resolve))
  const lag = monitorEventLoopDelay({ resolution: 10 })
  let mark = { wall: at(), reads: 0, cpu: process.cpuUsage() }
  process.on('message', async (command: any) => {
    try {
      if (command.op === 'open') {
        for (const id of command.runIds) await sink.open(id)
        return process.send!({ ok: true })
      }
      if (command.op === 'start') {
        lag.reset()
        lag.enable()
        mark = { wall: at(), reads, cpu: process.cpuUsage() }
        tally.clear()
        return process.send!({ ok: true })
      }
      if (command.op === 'write') {
        const written: [string, number, number][] = []
        const interval = 1000 / command.tokensPerSecond
        const writers = await Promise.all(command.runIds.map((id: string) => sink.open(id)))
        await Promise.all(
          writers.map(async (writer: any, r: number) => {
            const started = performance.now() + (r / command.runIds.length) * interval
            for (let i = 0; i < command.tokens; i++) {
              const wait = started + i * interval - performance.now()
              if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
              written.push([command.runIds[r], i, at()])
              await writer.write({ t: 'text', v: `${i.toString(36)}.` })
            }
            await writer.end()
          })
        )
        lag.disable()
        for (const [sql, n] of [...tally].sort((a, b) => b[1] - a[1]).slice(0, 8)) {
          console.error(n, sql.slice(0, 160))
        }
        const seconds = (at() - mark.wall) / 1000
        const cpu = process.cpuUsage(mark.cpu)
        return process.send!({
          ok: true,
          written,
          readsPerSecond: (reads - mark.reads) / seconds,
          lagP99Ms: lag.percentile(99) / 1e6,
          cpuPercent: ((cpu.user + cpu.system) / 1000 / (seconds * 1000)) * 100,
        })
      }
      if (command.op === 'exit') {
        server.closeAllConnections()
        server.close()
        await sink.shutdown()
        await db.manager.closeAll()
        process.exit(0)
      }
    } catch (error) {
      process.send!({ ok: false, error: (error as Error).message })
    }
  })
  process.send!({ ready: true, port: (server.address() as { port: number }).port })
}

// ---------------------------------------------------------------- the viewers (this process)
function call(child: ChildProcess, command: object): Promise<any> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: any) =>
      message.ok ? resolve(message) : reject(new Error(message.error))
    )
    child.send(command)
  })
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY })

/** One SSE viewer: the arrival time of every token index of its run's text. */
function view(port: number, runId: string, arrivals: Map<string, number[]>, attached: () => void) {
  return new Promise<boolean>((resolve) => {
    const request = http.get({ host: '127.0.0.1', port, path: `/${runId}`, agent }, (response) => {
      if (response.statusCode !== 200) {
        response.resume()
        return resolve(false)
      }
      attached()
      let buffered = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        const now = at()
        buffered += chunk
        let end: number
        while ((end = buffered.indexOf('\n\n')) !== -1) {
          const block = buffered.slice(0, end)
          buffered = buffered.slice(end + 2)
          const data = block.split('\n').find((line) => line.startsWith('data: '))
          if (!data || !data.includes('TEXT_MESSAGE_CONTENT')) continue
          const event = JSON.parse(data.slice(6))
          for (const piece of String(event.delta).split('.')) {
            if (piece === '') continue
            const key = `${runId}:${Number.parseInt(piece, 36)}`
            const list = arrivals.get(key)
            if (list) list.push(now)
            else arrivals.set(key, [now])
          }
        }
      })
      response.on('end', () => resolve(true))
      response.on('error', () => resolve(false))
    })
    request.on('error', (error) => {
      console.error('viewer: ', error.message)
      resolve(false)
    })
  })
}

async function scenario(dialect: string, runs: number, viewersPerRun: number, tag: string) {
  const { createDatabase, resetTables } = await import('../../tests/helpers/db.js')
  const { DoorRunStore } = await import('../../src/store/door_runs.js')
  const { tableNames } = await import('../../src/store/schema.js')
  process.env.DB = dialect
  const db = createDatabase()
  await resetTables(db)
  const store = new DoorRunStore(() => db.connection(), tableNames())
  const runIds = Array.from({ length: runs }, (_, i) => `scale-view-${tag}-${process.pid}-${i}`)
  for (const runId of runIds) {
    await store.insert({
      runId,
      threadId: runId,
      streamRunId: runId,
      afterSeq: 0,
      kind: 'start',
      resumeHash: null,
      ownerId: null,
    } as any)
  }
  await db.manager.closeAll()
  const child = fork(fileURLToPath(import.meta.url), ['replica'], {
    execArgv: [
      '--import=@poppinss/ts-exec',
      // BENCH_PROFILE=<dir>: a V8 CPU profile of the replica, written there when it exits.
      ...(process.env.BENCH_PROFILE
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
        : []),
    ],
    env: { ...process.env, DB: dialect },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready: any = await new Promise((resolve) => child.once('message', resolve))
  await call(child, { op: 'open', runIds })
  const arrivals = new Map<string, number[]>()
  let attachedCount = 0
  const total = runs * viewersPerRun
  const viewing: Promise<boolean>[] = []
  // Every viewer at once: the storm a replica restart or a deploy makes.
  for (const runId of runIds) {
    for (let v = 0; v < viewersPerRun; v++) {
      viewing.push(view(ready.port, runId, arrivals, () => attachedCount++))
    }
  }
  const deadline = Date.now() + 30_000 + total * 2
  while (attachedCount < total && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await new Promise((resolve) => setTimeout(resolve, 500))
  await call(child, { op: 'start' })
  const written = await call(child, {
    op: 'write',
    runIds,
    tokens: Math.round(TOKENS_PER_SECOND * SECONDS),
    tokensPerSecond: TOKENS_PER_SECOND,
  })
  const ended = Promise.all(viewing)
  await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 30_000))])
  const latencies: number[] = []
  let missing = 0
  for (const [runId, i, writtenAt] of written.written as [string, number, number][]) {
    const got = arrivals.get(`${runId}:${i}`) ?? []
    missing += viewersPerRun - got.length
    for (const arrived of got) latencies.push(arrived - writtenAt)
  }
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.send({ op: 'exit' })
  await exited
  return {
    attached: attachedCount,
    missing,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    readsPerSecond: written.readsPerSecond as number,
    lagP99Ms: written.lagP99Ms as number,
    cpuPercent: written.cpuPercent as number,
  }
}

function emit(db: string, metric: string, x: number, xLabel: string, value: number, unit: string) {
  emitRow({ metric, db, x, xLabel, value, unit })
}

async function main() {
  // BENCH_TALKING / BENCH_ONE_RUN (comma lists, or empty): other points of either curve.
  const points = (name: string, sizes: number[]) => {
    const given = process.env[name]
    if (given === undefined) return sizes
    return given.split(',').filter(Boolean).map(Number)
  }
  const talking = points('BENCH_TALKING', QUICK ? [50, 100] : [50, 100, 200, 400, 800])
  const oneRun = points('BENCH_ONE_RUN', QUICK ? [1, 100] : [1, 100, 1000, 5000])
  for (const db of DBS) {
    for (const runs of talking) {
      const r = await scenario(db, runs, 10, `t${runs}`)
      console.error(db, 'talking', runs, JSON.stringify(r))
      const label = 'talking runs x 10 viewers'
      emit(db, 'talking viewers missing deliveries', runs, label, r.missing, 'deliveries')
      emit(db, 'talking viewers not attached', runs, label, runs * 10 - r.attached, 'viewers')
      emit(db, 'talking viewers write->viewer p50', runs, label, r.p50, 'ms')
      emit(db, 'talking viewers write->viewer p99', runs, label, r.p99, 'ms')
      emit(db, 'talking viewers replica cpu', runs, label, r.cpuPercent, '%')
    }
    for (const viewers of oneRun) {
      const r = await scenario(db, 1, viewers, `o${viewers}`)
      console.error(db, 'one run', viewers, JSON.stringify(r))
      const label = 'viewers of one run'
      emit(db, 'one run write->viewer p99', viewers, label, r.p99, 'ms')
      emit(db, 'one run missing deliveries', viewers, label, r.missing, 'deliveries')
      emit(db, 'one run replica reads/s', viewers, label, r.readsPerSecond, 'reads/s')
      emit(db, 'one run replica event-loop lag p99', viewers, label, r.lagP99Ms, 'ms')
    }
  }
}

if (process.argv[2] === 'replica') await replica()
else await main()
