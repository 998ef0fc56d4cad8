import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { LucidSinkWriter } from '../sink/writer.js'
import type { ParkingStore } from '../parking/parking_store.js'
import type { RunMeta } from '../core/run.js'
import { DEFAULTS } from '../defaults.js'
import { recordSegmentEnded } from '../telemetry/metrics/index.js'
import type { RunContext, RunOutcome } from './contract.js'
import type { DriverOptions } from './driver_options.js'
import { SHUTDOWN_OUTCOME, type Drain } from './drain.js'
import { runContext, type RunContextReads } from './run_context.js'
import { finishSegment } from './segment_outcome.js'
import { SegmentStop, STOPPED_OUTCOME } from './segment_stop.js'

/** What running one segment needs of the driver that runs it. */
export interface SegmentHost {
  sink: LucidTokenStreamSink
  parks: ParkingStore['parks']
  options: Pick<DriverOptions, 'stopGraceMs' | 'onStreamEnd' | 'onError'>
  /** The replica's graceful shutdown: a segment still running when it is up stops. */
  drain: Drain
  /** The segments running on this replica, by stream: where a stop heard here finds its own. */
  running: Map<string, SegmentStop>
  /** What a run's context reads through the driver. */
  reads: RunContextReads
  /** Claim a suspension that is ready already, and resume it (`RunDriver.tryResume`). */
  tryResume: (runId: string, park: number) => Promise<boolean>
  /** Keep `work` among what the driver waits for (`RunDriver.settled`). */
  track: <T>(work: Promise<T>) => Promise<T>
}

/** Whether a value survives JSON (the checkpoint is stored as JSON text). */
function isJson(value: unknown) {
  try {
    return JSON.stringify(value ?? null) !== undefined
  } catch {
    return false
  }
}

/**
 * What a segment ends with, given what its runner returned and what happened meanwhile: a
 * writer lost to an outage fails it; a stop cancels it (whatever the runner returned, even a
 * park); a drain's end fails it `replica_shutdown`; an aborted signal cancels it unless it
 * parked; a park whose checkpoint cannot be stored as JSON fails it (it could never resume).
 */
function judged(
  outcome: RunOutcome,
  seen: { lost: boolean; stopped: boolean; shutDown: boolean; aborted: boolean }
): RunOutcome {
  if (seen.lost) return { status: 'failed' }
  if (seen.stopped) return { status: 'cancelled' }
  if (seen.shutDown) return { status: 'failed', code: 'replica_shutdown' }
  if (seen.aborted && outcome.status !== 'parked') return { status: 'cancelled' }
  if (outcome.status === 'parked' && !isJson(outcome.checkpoint)) return { status: 'failed' }
  return outcome
}

/**
 * Run one segment of `meta`'s run on `writer`: call the runner (`call`) with its context, under
 * the segment's stops (a stop recorded on any replica, the database lost past the outage bound,
 * the stream taken over by another replica, the drain's end), then judge and write its outcome
 * (`finishSegment`) and release the writer. Taken for dead meanwhile, it writes nothing (the
 * stream is another replica's) and resolves `failed`.
 */
export async function runSegment(
  host: SegmentHost,
  writer: LucidSinkWriter,
  meta: RunMeta,
  input: unknown,
  call: (ctx: RunContext) => Promise<RunOutcome>
): Promise<RunOutcome> {
  const internals = sinkInternals(host.sink)
  const controller = new AbortController()
  const stop = new SegmentStop(controller, host.options.stopGraceMs ?? DEFAULTS.stopGraceMs)
  host.running.set(meta.streamRunId, stop)
  // A stop recorded on any replica reaches this one through the stream's wake-ups.
  const unwatch = internals.stops.watch(meta.streamRunId, (mode) => stop.stop(mode))
  // The database stayed away past the outage bound: the agent is stopped at once (the writer
  // records the failure when the database is back).
  writer.onLost = () => controller.abort()
  // Another replica took the stream over (this one was taken for dead): the agent stops, and
  // nothing of this segment's outcome is written (the stream is the other replica's now).
  writer.onLeaseLost = () => controller.abort()
  const segment = { stopped: false }
  const drain = host.drain.watch()
  let outcome: RunOutcome
  try {
    const running = call(runContext(host.reads, meta, writer, input, controller.signal, segment))
    // Stopped by a drain: what the runner still does (or throws) no longer counts.
    running.catch(() => {})
    outcome = await Promise.race([running, drain.stopped, stop.halted])
    if (outcome === SHUTDOWN_OUTCOME || outcome === STOPPED_OUTCOME) {
      segment.stopped = true
      controller.abort()
    }
  } catch {
    outcome = { status: 'failed' }
  } finally {
    drain.done()
    stop.done()
    unwatch()
    host.running.delete(meta.streamRunId)
  }
  // Taken for dead meanwhile (another replica continues the segment): nothing of this
  // outcome is written, nor are the segment's parks touched.
  if (!(await writer.holdsStream())) {
    writer.release()
    return { status: 'failed' }
  }
  outcome = judged(outcome, {
    lost: Boolean(writer.lost),
    stopped: stop.mode !== null,
    shutDown: segment.stopped,
    aborted: controller.signal.aborted,
  })
  try {
    outcome = await finishSegment(
      {
        parks: host.parks,
        outageBoundMs: host.sink.options.outageBoundMs,
        tryResume: host.tryResume,
        withdrawStop: (trx, runId) => internals.stops.requests.withdraw(trx, runId),
        lifecycle: internals.lifecycle,
      },
      writer,
      meta,
      input,
      outcome
    )
    recordSegmentEnded(outcome.status)
    const onEnd = outcome.status !== 'parked' && !writer.lost && host.options.onStreamEnd
    if (onEnd) void host.track(onEnd(meta)).catch((e) => host.options.onError?.(e))
  } catch (error) {
    host.options.onError?.(error)
  } finally {
    // Whatever happened, this writer stops renewing the lease: if the outcome could not be
    // written, the lease lapses and readers get run_failed instead of waiting forever.
    writer.release()
  }
  return outcome
}
