import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { LucidSinkWriter } from '../sink/writer.js'
import type { ParkingStore } from '../parking/parking_store.js'
import { cancelledCall } from '../parking/settlement_frames.js'
import type { RunMeta } from '../core/run.js'
import { retryTransient } from '../sink/outage.js'
import { FAILURE_SENTENCES, type RunOutcome } from './contract.js'
import { lifecycleIds, NO_LIFECYCLE, type LifecycleRecorder } from '../core/lifecycle.js'

/** What writing a segment's outcome needs of the driver. */
export interface OutcomeDeps {
  parks: ParkingStore['parks']
  /** The sink's `outageBoundMs`: the outcome is written through an outage up to it. */
  outageBoundMs: number
  /** Claim a suspension that is ready already, and resume it (`RunDriver.tryResume`). */
  tryResume: (runId: string, park: number) => Promise<boolean>
  /** Withdraw a stop recorded too late, in the end's transaction (`StopRequests.withdraw`). */
  withdrawStop: (trx: TransactionClientContract, runId: string) => Promise<void>
  /** Where the segment's end is recorded as a lifecycle event, in the end's transaction. */
  lifecycle?: LifecycleRecorder
}

/**
 * Write a segment's outcome into its stream and end it (the run driver's last step): on a
 * park, the checkpoint and `parked` with the end marker; a cancel denies the calls still waiting
 * for approval and writes `cancelled`; a failure its `error` frame with a fixed sentence. An end
 * that is neither `cancelled` nor a park withdraws, in its transaction, a stop recorded after the
 * driver last looked (the run ended on its own first: the stop's caller is told so).
 */
export async function finishSegment(
  deps: OutcomeDeps,
  writer: LucidSinkWriter,
  meta: RunMeta,
  input: unknown,
  outcome: RunOutcome
): Promise<RunOutcome> {
  const stream = meta.streamRunId
  const lifecycle = deps.lifecycle ?? NO_LIFECYCLE
  const ended = (
    trx: TransactionClientContract,
    type: 'run.finished' | 'run.failed' | 'run.cancelled',
    code?: string
  ) =>
    lifecycle.record(trx, {
      type,
      data: {
        ...lifecycleIds(meta, type.slice('run.'.length)),
        runId: stream,
        ...(code ? { code } : {}),
      },
    })
  // A lost run's writer writes its failure itself, once the database is back.
  if (writer.lost) return outcome
  // The outcome is written through a database outage too (up to its bound): these reads and
  // the abandon are safe to repeat, the writer's commits retry on their own.
  const retry = { boundMs: deps.outageBoundMs }
  if (
    outcome.status === 'parked' &&
    (await retryTransient(() => deps.parks.hasOpen(stream), retry))
  ) {
    // The end marker, the checkpoint and `parked` commit together: the suspension becomes
    // claimable only once the segment ended (a resume reopens the stream), and never stays
    // half-parked after a crash.
    let parked: { runId: string; park: number }[] = []
    const checkpoint = outcome.checkpoint
    await writer.end({
      // A stop recorded after the driver last looked stays: the stop cancels the parked run
      // (or, decided meanwhile, the resumed segment stops as it starts).
      within: async (trx) => {
        parked = await deps.parks.parked(trx, stream, checkpoint, input, meta.runId)
        // One `run.parked` per run that parked in the segment (the outbox reads its items).
        for (const suspension of parked) {
          await lifecycle.record(trx, {
            type: 'run.parked',
            data: {
              ...lifecycleIds({ ...meta, runId: suspension.runId }, 'parked'),
              park: suspension.park,
            },
          })
        }
      },
    })
    // Decisions that landed before the segment returned: the segment may be ready already
    // (every run that parked in it is claimed together: the first try claims it, if any does).
    for (const suspension of parked) {
      if (await deps.tryResume(suspension.runId, suspension.park)) break
    }
    return outcome
  }
  if (outcome.status === 'parked') {
    // Parked on nothing a person can answer: that run can never continue.
    await writer.end({
      last: { t: 'error', code: 'run_failed', message: FAILURE_SENTENCES.run_failed },
      within: async (trx) => {
        await deps.withdrawStop(trx, stream)
        await ended(trx, 'run.failed', 'run_failed')
      },
    })
    return { status: 'failed' }
  }
  // Kept across attempts: a retry after part of the abandon landed still denies every call.
  const abandoned: string[] = []
  await retryTransient(() => deps.parks.abandon(stream, abandoned), retry)
  if (outcome.status === 'cancelled') {
    // The calls this segment asked approval for will not run: each gets its denial, as a
    // cancel of a parked run writes (the conversation stays valid for a next model call).
    for (const id of abandoned) await writer.write(cancelledCall(id))
    // The run's end for its readers commits with the stream's end (`end({ last })`).
    await writer.end({
      last: { t: 'event', event: { kind: 'cancelled' } },
      within: (trx) => ended(trx, 'run.cancelled'),
    })
    return outcome
  }
  const code = outcome.status === 'failed' ? (outcome.code ?? 'run_failed') : null
  await writer.end({
    ...(code
      ? {
          last: {
            t: 'error' as const,
            code,
            message: FAILURE_SENTENCES[code] ?? FAILURE_SENTENCES.run_failed,
          },
        }
      : {}),
    within: async (trx) => {
      await deps.withdrawStop(trx, stream)
      await ended(trx, code ? 'run.failed' : 'run.finished', code ?? undefined)
    },
  })
  return outcome
}
