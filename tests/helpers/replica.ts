import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { getActiveTest } from '@japa/runner'
import type { LucidSinkOptions } from '../../src/sink/lucid_sink.js'
import type { RedisNotifierSpec } from './redis.js'
import { within } from './bounded.js'

const SCRIPTS = {
  sink: fileURLToPath(new URL('../fixtures/replica.ts', import.meta.url)),
  parking: fileURLToPath(new URL('../fixtures/parking_replica.ts', import.meta.url)),
  aiSdk: fileURLToPath(new URL('../fixtures/ai_sdk_replica.ts', import.meta.url)),
  continuation: fileURLToPath(new URL('../fixtures/continuation_replica.ts', import.meta.url)),
  queue: fileURLToPath(new URL('../fixtures/queue_replica.ts', import.meta.url)),
  stop: fileURLToPath(new URL('../fixtures/stop_replica.ts', import.meta.url)),
  runner: fileURLToPath(new URL('../fixtures/runner_replica.ts', import.meta.url)),
  traces: fileURLToPath(new URL('../fixtures/traces_replica.ts', import.meta.url)),
}

/** Debian's libfaketime (package `faketime`): preloaded, it shifts the process's clock. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'

/** A second replica: a separate Node process with its own sink on the same database. */
export class Replica {
  #next = 0
  #listeners = new Map<number, (message: any) => void>()
  /** What the replica's sink told through `onError` (code, message, skewMs). */
  readonly warnings: { code?: string; message: string; skewMs?: number }[] = []

  private constructor(readonly child: ChildProcess) {
    child.on('message', (message: any) => {
      if (message.warning) this.warnings.push(message.warning)
      else this.#listeners.get(message.id)?.(message)
    })
  }

  static async start(
    options: LucidSinkOptions = {},
    {
      script = 'sink' as keyof typeof SCRIPTS,
      agent = {} as object,
      /** Extra environment (`PG_PORT`, `MYSQL_DATABASE`, ...: another database server). */
      env = {} as Record<string, string>,
      redis = undefined as RedisNotifierSpec | undefined,
      /** Run the replica with its clock this far off (`+30s`, `-30s`: Debian's libfaketime). */
      faketime = undefined as string | undefined,
    } = {}
  ) {
    const child = fork(SCRIPTS[script], [], {
      execArgv: ['--import=@poppinss/ts-exec'],
      env: {
        ...process.env,
        ...env,
        SINK_OPTIONS: JSON.stringify(options),
        AGENT_OPTIONS: JSON.stringify(agent),
        // `sink` and `stop` replicas: wake and publish through Redis (notifiers.redis()).
        REDIS_NOTIFIER: redis ? JSON.stringify(redis) : '',
        ...(faketime ? { LD_PRELOAD: LIBFAKETIME, FAKETIME: faketime } : {}),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve())
      child.once('exit', (code) => reject(new Error(`replica exited early (${code})`)))
    })
    const replica = new Replica(child)
    getActiveTest()?.cleanup(() => replica.kill())
    return replica
  }

  /** Send a command and wait for its final reply. */
  call(command: Record<string, unknown>): Promise<any> {
    const id = ++this.#next
    return new Promise((resolve, reject) => {
      this.#listeners.set(id, (message) => {
        if (message.error) reject(new Error(message.error))
        else if (message.ok) {
          this.#listeners.delete(id)
          resolve(message)
        }
      })
      this.child.send({ ...command, id })
    })
  }

  /** Subscribe in the replica; `onFrame` sees each frame; resolves when the subscription ends. */
  subscribe(runId: string, onFrame: (frame: any, at: number) => void, after?: string) {
    const id = ++this.#next
    let subscribed!: () => void
    const ready = new Promise<void>((resolve) => (subscribed = resolve))
    const done = new Promise<void>((resolve, reject) => {
      this.#listeners.set(id, (message) => {
        if (message.subscribed) subscribed()
        else if (message.frame) onFrame(message.frame, message.at)
        else if (message.error) reject(new Error(message.error))
        else if (message.ok) resolve()
      })
    })
    this.child.send({ op: 'subscribe', runId, after, id })
    return { ready, done }
  }

  /**
   * The next message the replica sends of its own (not a reply) that `match` accepts, within
   * `ms`. Listens from the call on: call it before what makes the replica tell.
   */
  told(match: (message: any) => boolean, ms = 10_000): Promise<any> {
    let on!: (message: any) => void
    const heard = new Promise<any>((resolve) => {
      on = (message) => message.id === undefined && match(message) && resolve(message)
      this.child.on('message', on)
    })
    return within(heard, ms, 'the replica did not tell').finally(() =>
      this.child.off('message', on)
    )
  }

  kill(signal: NodeJS.Signals = 'SIGKILL') {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal)
  }
}
