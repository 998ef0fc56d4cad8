/**
 * Stop latency across replicas: the agent talks in a second Node process (bench/stop_agent.ts),
 * the stop is asked for here, through this replica's `RunControl.stop` (what every stop route
 * calls), while readers here follow the run. Per stop:
 *
 * - stop -> the agent's `signal` aborted in the other process: from just before `stop()` here to
 *   the agent's abort listener there, both on the wall clock the two processes share
 *   (`performance.timeOrigin + performance.now()`, as the other cross-process rows; the abort's
 *   IPC message, timed on arrival here, checks that the two clocks agree);
 * - the part of it after the stop's commit returned here (the hop across processes);
 * - stop -> the last of the readers here got the stream's cancelled end (its `cancelled` event).
 *
 * For each notifier the database has: PostgreSQL NOTIFY (PostgreSQL only), Redis
 * (`notifiers.redis()` on both replicas), the poll (`'poll'`, 100 ms). The first stop of each is
 * a warm-up, not counted.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { createRuntime } from '../src/runtime.js'
import { sinkInternals, type LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { notifiers } from '../src/follow/notifiers/index.js'
import { RedisNotifier } from '../src/follow/notifiers/redis.js'
import { createDatabase, resetTables } from '../tests/helpers/db.js'
import { now } from './baseline.js'
import { percentile } from './script.js'

export interface StopBenchOptions {
  /** The database's name in the table. */
  label: string
  /** Stops per notifier (plus one warm-up). */
  stops: number
  /** Readers following each run on this replica. */
  readers: number
  redisUrl: string
  redisPrefix: string
  /** Whether Redis answers (else the Redis rows print n/a). */
  redis: boolean
}

type Row = { metric: string; db: string; ours: string; baseline: string; target: string }
type Notifier = 'notify' | 'redis' | 'poll'
const POLL_MS = 100
const NAMES: Record<Notifier, string> = {
  notify: 'PostgreSQL NOTIFY',
  redis: 'Redis notifier',
  poll: `poll (${POLL_MS} ms)`,
}

/** The sink options of both replicas, but Redis's client (`notifiers.redis()`, made in each). */
const sinkOptions = (notifier: Notifier) =>
  notifier === 'redis'
    ? {}
    : notifier === 'poll'
      ? { notifier, pollIntervalMs: POLL_MS }
      : { notifier }

/** The agent's replica: a second process, waking up through `notifier`. */
class AgentReplica {
  #next = 0
  #replies = new Map<number, (message: any) => void>()
  #aborts = new Map<string, (at: number, heard: number) => void>()

  private constructor(readonly child: ChildProcess) {
    child.on('message', (message: any) => {
      if (message.aborted) this.#aborts.get(message.aborted)?.(message.at, now())
      else this.#replies.get(message.id)?.(message)
    })
  }

  static async start(dialect: string, notifier: Notifier, channel: string) {
    const child = fork(fileURLToPath(new URL('./stop_agent.ts', import.meta.url)), [], {
      execArgv: ['--import=@poppinss/ts-exec'],
      env: {
        ...process.env,
        DB: dialect,
        SINK_OPTIONS: JSON.stringify(sinkOptions(notifier)),
        REDIS_NOTIFIER: notifier === 'redis' ? JSON.stringify({ channel }) : '',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve())
      child.once('exit', (code) => reject(new Error(`stop agent exited early (${code})`)))
    })
    return new AgentReplica(child)
  }

  /** Start a run there; resolves once its first word is committed. */
  start(runId: string): Promise<void> {
    const id = ++this.#next
    return new Promise((resolve, reject) => {
      this.#replies.set(id, (message) => {
        this.#replies.delete(id)
        if (message.ok) resolve()
        else reject(new Error(message.error))
      })
      this.child.send({ id, op: 'start', runId })
    })
  }

  /**
   * When (shared wall clock) the agent of `runId` saw its signal abort, and when its message
   * about it arrived here (after `at` if the two clocks agree: the check of the shared clock).
   */
  aborted(runId: string): Promise<{ at: number; heard: number }> {
    return new Promise((resolve) =>
      this.#aborts.set(runId, (at, heard) => {
        this.#aborts.delete(runId)
        resolve({ at, heard })
      })
    )
  }

  async exit() {
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.send({ op: 'exit' })
    await exited
  }
}

/** A reader of `runId` here: `live` once it holds the first word, `done` its cancelled time. */
function follow(sink: LucidTokenStreamSink, runId: string) {
  let heard!: () => void
  const live = new Promise<void>((resolve) => (heard = resolve))
  const done = (async () => {
    let cancelledAt = Number.NaN
    for await (const frame of sink.subscribe(runId)) {
      if (frame.t === 'text') heard()
      if (frame.t === 'event' && frame.event.kind === 'cancelled') cancelledAt = now()
    }
    return cancelledAt
  })()
  return { live, done }
}

/** Bound a wait: a stop the other process never hears fails the run, it does not hang it. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

let seq = 0

/**
 * Keep `sink`'s notifiers up for the whole measurement (as on a replica with other runs: they
 * idle when nothing is followed) and wait until Redis, if it is one, confirms its subscription.
 */
export async function holdNotifiers(sink: LucidTokenStreamSink) {
  const { tail } = sinkInternals(sink)
  const release = tail.hold()
  const redis = tail.notifiers.find((n) => n instanceof RedisNotifier) as RedisNotifier | undefined
  for (let i = 0; redis && !redis.listening; i++) {
    if (i === 500) throw new Error('Redis notifier: no subscription within 5 s')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return release
}

/** A pause of a random part of the poll interval. */
const pause = () => new Promise((resolve) => setTimeout(resolve, Math.random() * POLL_MS))

/** Record when each stop's commit returned here (the stop recorded, the other replicas woken). */
function instrumentStops(sink: LucidTokenStreamSink) {
  const committedAt = new Map<string, number>()
  const requests = sinkInternals(sink).stops.requests
  const request = requests.request.bind(requests)
  requests.request = async (runId, mode, by) => {
    const result = await request(runId, mode, by)
    committedAt.set(runId, now())
    return result
  }
  return committedAt
}

/** `stops` stops of runs talking in another process, with one notifier; latencies in ms. */
async function measure(dialect: string, notifier: Notifier, options: StopBenchOptions) {
  const channel = `${options.redisPrefix}stop:${process.pid}:${dialect}`
  const client = notifier === 'redis' ? new Redis(options.redisUrl) : null
  client?.on('error', () => {})
  const db = createDatabase()
  const runtime = createRuntime(db, {
    runner: {
      start: async () => ({ status: 'finished' }),
      resume: async () => ({ status: 'finished' }),
    },
    ...sinkOptions(notifier),
    ...(client ? { notifier: notifiers.redis({ client, channel }) } : {}),
  })
  const committedAt = instrumentStops(runtime.sink)
  const out = {
    aborts: [] as number[],
    commits: [] as number[],
    ipc: [] as number[],
    ends: [] as number[],
  }
  let agent: AgentReplica | null = null
  let release = () => {}
  try {
    agent = await AgentReplica.start(dialect, notifier, channel)
    release = await holdNotifiers(runtime.sink)
    for (let i = 0; i <= options.stops; i++) {
      const runId = `bench-stop-${process.pid}-${++seq}`
      // Runs start, and stops come, at any moment of either replica's poll (the agent's stop
      // watch polls from the run's start; this loop would otherwise start on this one's tick).
      await pause()
      await within(agent.start(runId), 10_000, 'start')
      const readers = Array.from({ length: options.readers }, () => follow(runtime.sink, runId))
      await within(Promise.all(readers.map((r) => r.live)), 10_000, 'readers')
      await pause()
      const aborted = agent.aborted(runId)
      const t0 = now()
      const outcome = await runtime.control.stop(runId, { principal: { id: 'bench' }, via: 'api' })
      if (outcome.status !== 'cancelled') throw new Error(`stop answered ${outcome.status}`)
      const abortedAt = await within(aborted, 10_000, 'abort')
      const cancelled = await within(Promise.all(readers.map((r) => r.done)), 10_000, 'readers')
      if (cancelled.some((at) => Number.isNaN(at))) throw new Error('a reader missed cancelled')
      if (i === 0) continue
      out.aborts.push(abortedAt.at - t0)
      out.commits.push(committedAt.get(runId)! - t0)
      out.ipc.push(abortedAt.heard - abortedAt.at)
      out.ends.push(Math.max(...cancelled) - t0)
    }
  } finally {
    release()
    await agent?.exit()
    await runtime.sink.shutdown()
    await db.manager.closeAll()
    client?.disconnect()
  }
  return out
}

const p50p99 = (values: number[]) =>
  `${percentile(values, 50).toFixed(2)} / ${percentile(values, 99).toFixed(2)}`

/** The stop rows of one database: for each of its notifiers, the three figures. */
export async function benchStop(dialect: string, options: StopBenchOptions): Promise<Row[]> {
  process.env.DB = dialect
  const db = createDatabase()
  await resetTables(db)
  await db.manager.closeAll()
  const rows: Row[] = []
  const kinds: Notifier[] = dialect === 'pg' ? ['notify', 'redis', 'poll'] : ['redis', 'poll']
  for (const notifier of kinds) {
    const name = NAMES[notifier]
    const fast = notifier !== 'poll'
    const metrics = [
      `stop (RunControl.stop here) -> the agent's signal aborted in another process, ${name}, p50 / p99 ms (${options.stops} stops; IPC: the abort's message on to here, the shared clock's check)`,
      `same, from the stop's commit returning here -> the abort there, ${name}, p50 / p99 ms (stop -> its commit)`,
      `same stop -> the last of ${options.readers} readers here got the cancelled end, ${name}, p50 / p99 ms`,
    ]
    const targets = fast
      ? ['p50 <= 5', '<= cross-process delivery (p50 <= 3)', '(reported)']
      : ['(polling: <= poll interval)', '(polling: <= poll interval)', '(reported)']
    let cells: string[]
    if (notifier === 'redis' && !options.redis) cells = metrics.map(() => 'n/a (no Redis)')
    else {
      const { aborts, commits, ends, ipc } = await measure(dialect, notifier, options)
      const hops = aborts.map((at, k) => at - commits[k])
      cells = [
        `${p50p99(aborts)} (IPC ${p50p99(ipc)})`,
        `${p50p99(hops)} (${p50p99(commits)})`,
        p50p99(ends),
      ]
    }
    metrics.forEach((metric, k) =>
      rows.push({ metric, db: options.label, ours: cells[k], baseline: 'n/a', target: targets[k] })
    )
  }
  return rows
}
