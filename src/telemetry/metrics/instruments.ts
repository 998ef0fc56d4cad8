import {
  createNoopMeter,
  metrics,
  type Counter,
  type Histogram,
  type MeterProvider,
  type ObservableGauge,
  type UpDownCounter,
} from '@opentelemetry/api'
import { meter } from '../otel.js'
import { METRIC } from './names.js'

/** Seconds a person may take to decide: a second to a week. */
const PARK_BUCKETS = [
  1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800,
]
/** Seconds of a wake-up or a resume: a millisecond to a minute. */
const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]
/** Streams carried by one transaction (at most `groupCommitMembers`). */
const GROUP_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
/** Seconds from an event's commit to its webhook's delivery: 10 ms to a day (retries included). */
const WEBHOOK_BUCKETS = [
  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400,
]

/** The package's instruments, made from one meter provider. */
export interface Instruments {
  framesWritten: Counter
  bytesWritten: Counter
  groupCommitStreams: Histogram
  outageBufferUsage: ObservableGauge
  liveReaders: UpDownCounter
  reattaches: Counter
  replayRows: Counter
  notifierLag: Histogram
  parkDuration: Histogram
  resumeDelay: Histogram
  expiries: Counter
  runsStarted: Counter
  runsEnded: Counter
  webhookAttempts: Counter
  webhookDelay: Histogram
}

/** Run once per provider, once its instruments exist (observable callbacks). */
const onBuilt: ((made: Instruments) => void)[] = []

/** Register what an observable instrument reports (called for every provider, when it is built). */
export function whenBuilt(observe: (made: Instruments) => void) {
  onBuilt.push(observe)
  if (cache?.made) observe(cache.made)
}

let cache: { provider: MeterProvider; made: Instruments | null } | null = null

const NOOP_COUNTER = createNoopMeter().createCounter('noop').constructor

/**
 * The instruments of the global meter provider as it is now, made on first use after it changed
 * (a provider registered after the package loaded is the one used; `metrics.disable()` goes
 * back to none), or `null` while there is no SDK: then nothing is measured, nothing computed.
 */
export function instruments(): Instruments | null {
  const provider = metrics.getMeterProvider()
  if (cache?.provider === provider) return cache.made
  cache = { provider, made: build() }
  if (cache.made) for (const each of onBuilt) each(cache.made)
  return cache.made
}

function build(): Instruments | null {
  const m = meter()
  const probe = m.createCounter(METRIC.framesWritten, {
    unit: '{frame}',
    description: 'Frames stored by the sink (a coalesced text row counts once), at commit.',
  })
  if (probe.constructor === NOOP_COUNTER) return null
  return {
    framesWritten: probe,
    bytesWritten: m.createCounter(METRIC.bytesWritten, {
      unit: 'By',
      description: 'UTF-8 bytes of frame bodies stored by the sink (text grown in place included).',
    }),
    groupCommitStreams: m.createHistogram(METRIC.groupCommitStreams, {
      unit: '{stream}',
      description: 'Streams whose appends one group-commit transaction carried.',
      advice: { explicitBucketBoundaries: GROUP_BUCKETS },
    }),
    outageBufferUsage: m.createObservableGauge(METRIC.outageBufferUsage, {
      unit: 'By',
      description:
        "Bytes this replica's writers hold in memory, uncommitted (bounded per writer by outageBufferBytes during an outage).",
    }),
    liveReaders: m.createUpDownCounter(METRIC.liveReaders, {
      unit: '{reader}',
      description: 'Readers following a stream on this replica (replay, then live).',
    }),
    reattaches: m.createCounter(METRIC.reattaches, {
      unit: '{reattach}',
      description:
        'Re-attaches to a run served by a door (a GET of its stream, from a cursor or the start).',
    }),
    replayRows: m.createCounter(METRIC.replayRows, {
      unit: '{row}',
      description:
        "Rows readers read from the database (a replay, or a reader behind the replica's shared feed).",
    }),
    notifierLag: m.createHistogram(METRIC.notifierLag, {
      unit: 's',
      description:
        "A commit of this replica to the notifier's wake-up for it heard back (NOTIFY, Redis).",
      advice: { explicitBucketBoundaries: LATENCY_BUCKETS },
    }),
    parkDuration: m.createHistogram(METRIC.parkDuration, {
      unit: 's',
      description:
        'A parked item from its ask to its decision, recorded when the decision commits.',
      advice: { explicitBucketBoundaries: PARK_BUCKETS },
    }),
    resumeDelay: m.createHistogram(METRIC.resumeDelay, {
      unit: 's',
      description:
        "A segment's last decision (its stored decided_at) to the resumed segment's start, on whichever replica resumed it.",
      advice: { explicitBucketBoundaries: LATENCY_BUCKETS },
    }),
    expiries: m.createCounter(METRIC.expiries, {
      unit: '{item}',
      description:
        'Parked items settled as expired (by the sweeper or an explicit expire), once each.',
    }),
    runsStarted: m.createCounter(METRIC.runsStarted, {
      unit: '{run}',
      description: 'Runs whose first segment started on this replica.',
    }),
    runsEnded: m.createCounter(METRIC.runsEnded, {
      unit: '{run}',
      description:
        'Runs whose segment ended the run (finished, failed, cancelled) on this replica.',
    }),
    webhookAttempts: m.createCounter(METRIC.webhookAttempts, {
      unit: '{attempt}',
      description:
        'Webhook delivery attempts this replica made, by event and result (delivered, failed and retried later, dead).',
    }),
    webhookDelay: m.createHistogram(METRIC.webhookDelay, {
      unit: 's',
      description:
        "A lifecycle event's commit to its webhook's delivery (retries included), recorded when it is delivered.",
      advice: { explicitBucketBoundaries: WEBHOOK_BUCKETS },
    }),
  }
}
