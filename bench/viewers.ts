/**
 * Many talking runs, many viewers (issue 11, docs/benchmark.md): R runs writing text at a fixed
 * token rate, V SSE viewers per run connected over HTTP to the replicas' AG-UI re-attach route,
 * every token stamped with its write time. Reports write -> delivery latency at the viewers, and
 * each replica's CPU, memory, database transactions/s and reads/s.
 *
 * Replicas are child processes (bench/viewer_replica.ts); this process is only the viewers. With
 * two replicas, each writes half of the runs and every run's viewers are split between both, so
 * half of the deliveries cross replicas (through the notifier).
 */
import { fork, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import { DoorRunStore } from '../src/store/door_runs.js'
import { tableNames } from '../src/store/schema.js'
import { percentile } from './script.js'

export interface ViewersPlan {
  runs: number
  viewersPerRun: number
  tokensPerSecond: number
  seconds: number
  replicas: number
}

const at = () => performance.timeOrigin + performance.now()

async function startReplica(dialect: string, index: number) {
  const child = fork(fileURLToPath(new URL('./viewer_replica.ts', import.meta.url)), [], {
    // BENCH_PROFILE=<dir>: a V8 CPU profile of each replica, written there when it exits.
    execArgv: [
      '--import=@poppinss/ts-exec',
      ...(process.env.BENCH_PROFILE
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
        : []),
    ],
    env: { ...process.env, DB: dialect, REPLICA: String(index) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready: any = await new Promise((resolve) => child.once('message', resolve))
  return { child, port: ready.port as number }
}

function call(child: ChildProcess, command: object): Promise<any> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: any) =>
      message.ok ? resolve(message) : reject(new Error(message.error))
    )
    child.send(command)
  })
}

/** One SSE viewer: the arrival time of every token index of its run's text. */
function view(port: number, runId: string, arrivals: Map<string, number[]>) {
  return new Promise<void>((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: `/${runId}` }, (response) => {
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
          if (!data) continue
          const event = JSON.parse(data.slice(6))
          if (event.type !== 'TEXT_MESSAGE_CONTENT') continue
          for (const piece of String(event.delta).split('.')) {
            if (piece === '') continue
            const key = `${runId}:${Number.parseInt(piece, 36)}`
            const list = arrivals.get(key)
            if (list) list.push(now)
            else arrivals.set(key, [now])
          }
        }
      })
      response.on('end', resolve)
      response.on('error', reject)
    })
    request.on('error', reject)
  })
}

/** Run the scenario; returns the measured numbers. */
export async function benchViewers(dialect: string, plan: ViewersPlan, tag: string) {
  const { createDatabase, resetTables } = await import('../tests/helpers/db.js')
  process.env.DB = dialect
  const db = createDatabase()
  await resetTables(db)
  const runs = new DoorRunStore(() => db.connection(), tableNames())
  const runIds = Array.from(
    { length: plan.runs },
    (_, i) => `bench-view-${tag}-${process.pid}-${i}`
  )
  for (const runId of runIds) {
    await runs.insert({
      runId,
      threadId: runId,
      streamRunId: runId,
      afterSeq: 0,
      kind: 'start',
      resumeHash: null,
      ownerId: null,
    })
  }
  const replicas = []
  for (let i = 0; i < plan.replicas; i++) replicas.push(await startReplica(dialect, i))
  const share = (i: number) => runIds.filter((_, r) => r % plan.replicas === i)
  for (const [i, replica] of replicas.entries()) {
    await call(replica.child, { op: 'open', runIds: share(i) })
  }
  const arrivals = new Map<string, number[]>()
  const viewing: Promise<void>[] = []
  for (const runId of runIds) {
    for (let v = 0; v < plan.viewersPerRun; v++) {
      viewing.push(view(replicas[v % replicas.length].port, runId, arrivals))
    }
  }
  // Let every viewer attach and go idle before the runs talk.
  await new Promise((resolve) => setTimeout(resolve, 1000 + plan.runs * plan.viewersPerRun))
  for (const replica of replicas) await call(replica.child, { op: 'measure', start: true })
  const tokens = Math.round(plan.tokensPerSecond * plan.seconds)
  const writes = await Promise.all(
    replicas.map((replica, i) =>
      call(replica.child, {
        op: 'write',
        runIds: share(i),
        tokens,
        intervalMs: 1000 / plan.tokensPerSecond,
      })
    )
  )
  const measured = await Promise.all(
    replicas.map((replica) => call(replica.child, { op: 'measure', start: false }))
  )
  await Promise.all(viewing)
  const latencies: number[] = []
  let missing = 0
  for (const { written } of writes) {
    for (const [runId, i, writtenAt] of written as [string, number, number][]) {
      const got = arrivals.get(`${runId}:${i}`) ?? []
      missing += plan.viewersPerRun - got.length
      for (const arrived of got) latencies.push(arrived - writtenAt)
    }
  }
  for (const { child } of replicas) {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.send({ op: 'exit' })
    await exited
  }
  await db.manager.closeAll()
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    deliveries: latencies.length,
    missing,
    replicas: measured as {
      cpuPercent: number
      rssMiB: number
      heapMiB: number
      transactionsPerSecond: number
      readsPerSecond: number
    }[],
  }
}
