/**
 * Issue 26, viewers per replica: two curves on ONE replica (a child process: the viewers run
 * in this process, so the replica's CPU is what is measured).
 *
 * - `talking`: R talking runs x 10 SSE viewers each, 30 tokens/s: missing deliveries and
 *   write -> viewer p50/p99 (R = 50/100/200/400/800; QUICK: 50/100);
 * - `one run`: V viewers of one talking run: p99, the replica's database reads/s and its
 *   event-loop lag p99 (V = 1/100/1000/5000; QUICK: 1/100), and beside it the floor: one
 *   event written to V raw sockets by a process doing nothing else (`socketFloor`).
 *
 * Only APIs main already had: createRuntime, the door's `reattach`, `serveAgUiEvents`, HTTP.
 * The replica's server listens with a backlog of 4096 (node's default is 511: a storm of
 * viewers attaching at once overflows it, see docs/operations.md).
 *
 *   BENCH_DBS=sqlite,pg,mysql node --expose-gc --import=@poppinss/ts-exec bench/scale/viewers.ts
 */
import { fork, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import net from 'node:net'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { DBS, emit as emitRow, percentile, QUICK } from './common.js'

const at = () => performance.timeOrigin + performance.now()
const SECONDS = QUICK ? 3 : 6
const TOKENS_PER_SECOND = 30
/** Viewers of each talking run (BENCH_PER_RUN; 10 in the curve). */
const PER_RUN = Number(process.env.BENCH_PER_RUN ?? 10)

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
          cpuMs: (cpu.user + cpu.system) / 1000,
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

// ------------------------------------------------ the floor: raw socket writes (child process)
/**
 * What writing one event to every viewer costs with nothing else: a child process accepts raw
 * TCP sockets and, on command, writes the same small SSE chunk (an HTTP/1.1 chunk, as a
 * response's) to each, timing the loop; the viewers (this process) read and drop it. On
 * loopback the kernel's receive path runs in the writer's syscall, so this is the least a
 * replica pays per event for `n` viewers on this machine, before any work of its own.
 */
async function floorChild() {
  const sockets: net.Socket[] = []
  const server = net.createServer((socket) => {
    socket.setNoDelay(true)
    sockets.push(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 4096, resolve))
  const event = 'id: 12345\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a."}\n\n'
  const chunk = Buffer.from(`${event.length.toString(16)}\r\n${event}\r\n`)
  process.on('message', async (command: any) => {
    if (command.op === 'count') return process.send!({ ok: true, sockets: sockets.length })
    if (command.op === 'write') {
      const rounds: number[] = []
      for (let round = 0; round < command.rounds; round++) {
        const start = performance.now()
        for (const socket of sockets) socket.write(chunk)
        rounds.push(performance.now() - start)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return process.send!({ ok: true, rounds })
    }
    for (const socket of sockets) socket.destroy()
    server.close()
    process.exit(0)
  })
  process.send!({ ready: true, port: (server.address() as net.AddressInfo).port })
}

/** Milliseconds the floor child takes to write one event to each of `n` sockets (median of 9). */
async function socketFloor(n: number) {
  const child = fork(fileURLToPath(import.meta.url), ['floor'], {
    execArgv: ['--import=@poppinss/ts-exec'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready: any = await new Promise((resolve) => child.once('message', resolve))
  const clients: net.Socket[] = []
  for (let i = 0; i < n; i++) {
    const socket = net.connect(ready.port, '127.0.0.1')
    socket.on('data', () => {})
    socket.on('error', () => {})
    clients.push(socket)
  }
  for (let tries = 0; tries < 300; tries++) {
    const { sockets } = await call(child, { op: 'count' })
    if (sockets >= n) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const { rounds } = await call(child, { op: 'write', rounds: 9 })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.send({ op: 'exit' })
  await exited
  for (const socket of clients) socket.destroy()
  return percentile(rounds, 50)
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

/**
 * What one viewer got: the arrival time of each token index of its run's text (NaN: never),
 * and deliveries that came twice or out of order.
 */
interface Viewer {
  runId: string
  times: Float64Array
  /** Token indexes that came again or before one already seen (each counted). */
  disorder: number
  /** Text events and socket reads it got. */
  events: number
  reads: number
}

/**
 * One SSE viewer, a lean client (issue 26: the viewers share the 2 cores with the replica, and a
 * heavy client steals its CPU): a raw TCP socket sends the GET and reads the response as latin1
 * text (the tokens are ASCII), split into SSE events at the blank line; only the events holding
 * `TEXT_MESSAGE_CONTENT` are looked into, their `delta` cut out without parsing the JSON. The
 * HTTP/1.1 chunk-size lines between writes sit between whole SSE events, never inside one. Each
 * token index is timestamped when its chunk arrives; one seen again or out of order is counted.
 */
function view(port: number, viewer: Viewer, attached: () => void) {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    let head = true
    let ok = false
    let buffered = ''
    let next = 0
    socket.setEncoding('latin1')
    socket.on('connect', () => {
      socket.write(`GET /${viewer.runId} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
    })
    socket.on('data', (chunk: string) => {
      const now = at()
      viewer.reads++
      buffered += chunk
      if (head) {
        const end = buffered.indexOf('\r\n\r\n')
        if (end === -1) return
        ok = buffered.startsWith('HTTP/1.1 200')
        if (!ok) return socket.destroy()
        head = false
        attached()
        buffered = buffered.slice(end + 4)
      }
      let start = 0
      let end: number
      while ((end = buffered.indexOf('\n\n', start)) !== -1) {
        const typeAt = buffered.indexOf('"TEXT_MESSAGE_CONTENT"', start)
        if (typeAt !== -1 && typeAt < end) {
          viewer.events++
          const from = buffered.indexOf('"delta":"', start) + 9
          const to = buffered.indexOf('"', from)
          for (const piece of buffered.slice(from, to).split('.')) {
            if (piece === '') continue
            const i = Number.parseInt(piece, 36)
            if (i !== next || !Number.isNaN(viewer.times[i])) viewer.disorder++
            else viewer.times[i] = now
            next = i + 1
          }
        }
        start = end + 2
      }
      buffered = start === 0 ? buffered : buffered.slice(start)
    })
    socket.on('close', () => resolve(ok))
    socket.on('error', (error) => {
      console.error('viewer: ', error.message)
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
  const tokens = Math.round(TOKENS_PER_SECOND * SECONDS)
  const viewers: Viewer[] = []
  let attachedCount = 0
  const total = runs * viewersPerRun
  const viewing: Promise<boolean>[] = []
  // Every viewer at once: the storm a replica restart or a deploy makes.
  for (const runId of runIds) {
    for (let v = 0; v < viewersPerRun; v++) {
      const viewer = {
        runId,
        times: new Float64Array(tokens).fill(Number.NaN),
        disorder: 0,
        events: 0,
        reads: 0,
      }
      viewers.push(viewer)
      viewing.push(view(ready.port, viewer, () => attachedCount++))
    }
  }
  const deadline = Date.now() + 30_000 + total * 2
  while (attachedCount < total && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await new Promise((resolve) => setTimeout(resolve, 500))
  await call(child, { op: 'start' })
  const mine = process.cpuUsage()
  const started = at()
  const written = await call(child, {
    op: 'write',
    runIds,
    tokens,
    tokensPerSecond: TOKENS_PER_SECOND,
  })
  const ended = Promise.all(viewing)
  await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 30_000))])
  const spent = process.cpuUsage(mine)
  const viewersCpuPercent = ((spent.user + spent.system) / 1000 / (at() - started)) * 100
  const writtenAt = new Map<string, Float64Array>()
  for (const [runId, i, time] of written.written as [string, number, number][]) {
    let times = writtenAt.get(runId)
    if (!times) writtenAt.set(runId, (times = new Float64Array(tokens)))
    times[i] = time
  }
  const latencies: number[] = []
  let missing = 0
  let disorder = 0
  let events = 0
  let reads = 0
  for (const viewer of viewers) {
    events += viewer.events
    reads += viewer.reads
    const sent = writtenAt.get(viewer.runId)!
    disorder += viewer.disorder
    for (let i = 0; i < tokens; i++) {
      if (Number.isNaN(viewer.times[i])) missing++
      else latencies.push(viewer.times[i] - sent[i])
    }
  }
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.send({ op: 'exit' })
  await exited
  return {
    attached: attachedCount,
    missing,
    disorder,
    viewersCpuPercent,
    textEventsPerViewer: events / viewers.length,
    // The replica's CPU (its writers' commits included) per text event delivered to a viewer.
    cpuMicrosPerDelivery: events > 0 ? ((written.cpuMs as number) * 1000) / events : null,
    readsPerViewer: reads / viewers.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    readsPerSecond: written.readsPerSecond as number,
    lagP99Ms: written.lagP99Ms as number,
    cpuPercent: written.cpuPercent as number,
  }
}

function emit(
  db: string,
  metric: string,
  x: number,
  xLabel: string,
  value: number | null,
  unit: string
) {
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
      const r = await scenario(db, runs, PER_RUN, `t${runs}`)
      console.error(db, 'talking', runs, JSON.stringify(r))
      const label = 'talking runs x 10 viewers'
      emit(db, 'talking viewers missing deliveries', runs, label, r.missing, 'deliveries')
      emit(db, 'talking viewers not attached', runs, label, runs * 10 - r.attached, 'viewers')
      emit(db, 'talking viewers write->viewer p50', runs, label, r.p50, 'ms')
      emit(db, 'talking viewers write->viewer p99', runs, label, r.p99, 'ms')
      emit(db, 'talking viewers replica cpu', runs, label, r.cpuPercent, '%')
      emit(
        db,
        'talking viewers replica cpu per delivery',
        runs,
        label,
        r.cpuMicrosPerDelivery,
        'µs'
      )
      emit(db, "talking viewers, the viewers' own cpu", runs, label, r.viewersCpuPercent, '%')
      emit(db, 'talking viewers twice or out of order', runs, label, r.disorder, 'deliveries')
    }
    for (const viewers of oneRun) {
      const r = await scenario(db, 1, viewers, `o${viewers}`)
      console.error(db, 'one run', viewers, JSON.stringify(r))
      const label = 'viewers of one run'
      emit(db, 'one run write->viewer p99', viewers, label, r.p99, 'ms')
      emit(db, 'one run missing deliveries', viewers, label, r.missing, 'deliveries')
      emit(db, 'one run twice or out of order', viewers, label, r.disorder, 'deliveries')
      emit(db, 'one run replica cpu', viewers, label, r.cpuPercent, '%')
      emit(db, 'one run replica cpu per delivery', viewers, label, r.cpuMicrosPerDelivery, 'µs')
      emit(db, "one run, the viewers' own cpu", viewers, label, r.viewersCpuPercent, '%')
      emit(db, 'one run replica reads/s', viewers, label, r.readsPerSecond, 'reads/s')
      emit(db, 'one run replica event-loop lag p99', viewers, label, r.lagP99Ms, 'ms')
      // The floor beside it: one event written to as many raw sockets, nothing else.
      const floor = await socketFloor(viewers)
      emit(db, 'one run floor: one event to every viewer, raw sockets', viewers, label, floor, 'ms')
    }
  }
}

if (process.argv[2] === 'replica') await replica()
else if (process.argv[2] === 'floor') await floorChild()
else await main()
