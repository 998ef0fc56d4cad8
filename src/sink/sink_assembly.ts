import type { Database } from '@adonisjs/lucid/database'
import { Tail } from '../follow/tail.js'
import { tableNames } from '../store/schema.js'
import { StreamReads } from '../store/stream_reads.js'
import { StreamStore } from '../store/stream_store.js'
import { StopRequests } from '../store/stop_requests.js'
import { DEFAULTS } from '../defaults.js'
import type { AppendContext } from './append.js'
import { ClockWatch } from './clock_watch.js'
import { StopWatch } from './stop_watch.js'
import { resolveSinkOptions, type LucidSinkOptions } from './sink_options.js'
import type { SinkInternals } from './sink_internals.js'
import { NO_LIFECYCLE } from '../core/lifecycle.js'

/**
 * The parts a `LucidTokenStreamSink` is made of, wired on its Lucid database: its options
 * resolved (every default), the store of writes and its notifiers, the reads, the tail reader,
 * the clock watch, the stop watch, and the append context its writers share. `sink` gives what
 * the tail calls back into the sink (a lapsed stream's settling, the clock's first read).
 */
export function assembleSink(
  db: Database,
  options: LucidSinkOptions,
  sink: { onLapsed: (runId: string) => Promise<void>; clock: () => Promise<void> }
) {
  const { connection, resolved, notifier } = resolveSinkOptions(db, options)
  const tables = tableNames(options.tables)
  const store = new StreamStore(
    () => db.connection(connection),
    tables,
    notifier.notifyChannel,
    notifier.publish,
    resolved.groupCommit ? DEFAULTS.groupCommitMembers : 0
  )
  const reads = new StreamReads(() => store.client, tables)
  const tail = new Tail(reads, notifier.notifiers, {
    windowSize: resolved.windowSize,
    windowBytes: resolved.windowBytes,
    pageSize: resolved.pageSize,
    onLapsed: sink.onLapsed,
    lapseGraceMs: resolved.leaseMs,
    clock: sink.clock,
  })
  const clock = new ClockWatch(() => store.client, options.onError)
  const stopRequests = new StopRequests(
    () => store.client,
    tables,
    () => ({ channel: store.notifyChannel, committed: store.committed })
  )
  const internals: SinkInternals = {
    store,
    reads,
    tail,
    clock,
    stops: new StopWatch(stopRequests, tail, resolved.pollIntervalMs, options.onError),
    lifecycle: options.lifecycle ?? NO_LIFECYCLE,
    get client() {
      return store.client
    },
  }
  const append: AppendContext = {
    store,
    tail,
    maxFrameBytes: resolved.maxFrameBytes,
    maxStateBytes: resolved.maxStateBytes,
    lifecycle: internals.lifecycle,
  }
  return { resolved, tables, internals, append, closeNotifier: notifier.close }
}
