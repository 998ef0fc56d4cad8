import { instruments } from './instruments.js'
import { ATTRIBUTE, oneOf } from './names.js'

const DECISIONS = ['approved', 'rejected', 'answered', 'expired', 'cancelled'] as const
const VIA = ['chat', 'admin', 'api', 'expiry', 'cancel', 'system'] as const

/** One parked item settled: when it was asked (database time, epoch ms), how and from where. */
export interface SettledPark {
  askedAt: number
  decision: string
  via: string
}

/**
 * Parked items settled in a transaction that committed at `at` (database time, epoch ms): each
 * one's `agent_stream.park.duration` (ask -> decision), by decision and via; an expired one
 * counts in `agent_stream.park.expiries`.
 */
export function recordParksSettled(settled: readonly SettledPark[], at: number) {
  const made = instruments()
  if (!made) return
  for (const park of settled) {
    const decision = oneOf(park.decision, DECISIONS)
    const attributes = {
      [ATTRIBUTE.decision]: decision,
      [ATTRIBUTE.decidedVia]: oneOf(park.via, VIA),
    }
    made.parkDuration.record(Math.max(0, at - park.askedAt) / 1000, attributes)
    if (decision === 'expired') made.expiries.add(1)
  }
}

/** Pending items asked at `askedAt` (epoch ms each) cancelled at `at` (a stop, a cancel). */
export function recordParksCancelled(askedAt: readonly number[], at: number) {
  if (askedAt.length === 0) return
  const via = 'cancel'
  recordParksSettled(
    askedAt.map((asked) => ({ askedAt: asked, decision: 'cancelled', via })),
    at
  )
}

/**
 * A decided segment was resumed at `at` (database time, epoch ms) on this replica: the time
 * since its last decision committed (`decidedAt`, as stored), whichever replica took it.
 */
export function recordResumed(decidedAt: number | undefined, at: number) {
  if (!decidedAt) return
  instruments()?.resumeDelay.record(Math.max(0, at - decidedAt) / 1000)
}
