import { instruments } from './instruments.js'
import { ATTRIBUTE } from './names.js'

/** A run's first segment started on this replica. */
export function recordRunStarted() {
  instruments()?.runsStarted.add(1)
}

/** A segment ended with `status`: the run ended unless it parked. */
export function recordSegmentEnded(status: 'finished' | 'parked' | 'cancelled' | 'failed') {
  if (status === 'parked') return
  instruments()?.runsEnded.add(1, { [ATTRIBUTE.outcome]: status })
}
