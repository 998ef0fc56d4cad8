import type { TranslatorCheckpoints } from '../checkpoints/index.js'
import type { Parking } from '../parking/parking.js'
import type { RunDriver } from '../runner/driver.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { DoorRunStore } from '../store/door_runs.js'
import { sinkInternals } from '../sink/lucid_sink.js'
import { RunControl } from '../runner/run_control.js'
import { ParkingTables } from '../parking/store_rows.js'
import { ParkingReads } from '../parking/store_reads.js'
import type { RunQueue } from '../runner/run_queue.js'
import { doorCheckpoints, type CheckpointSettings, type DoorState } from './checkpoints.js'

/** The layers every door stands on: the sink, the run driver, parking, the run rows. */
export interface DoorCore {
  sink: LucidTokenStreamSink
  driver: RunDriver
  parking: Parking
  /** The run rows the doors share (`src/store/door_runs.ts`). */
  runs: DoorRunStore
  /** Run control (the stop routes); default: one over the same layers. */
  control?: RunControl
  /** The busy-thread queue (`multitaskStrategy: 'enqueue'`). */
  queue: RunQueue
}

/**
 * What every use case of a door works with: the layers below it, its options `O`, and this
 * replica's checkpoints of its translator's state `S` (a re-attach replays only what follows
 * the nearest).
 */
export interface DoorDeps<O, S> extends DoorCore {
  options: O
  checkpoints?: TranslatorCheckpoints<S>
}

/** The one way a door's deps are built: the core, its options, its checkpoints. */
export function doorDeps<O extends CheckpointSettings, S>(
  core: DoorCore,
  options: O,
  state: DoorState<S>
): DoorDeps<O, S> {
  const { sink, driver, parking, runs, control, queue } = core
  return {
    sink,
    driver,
    parking,
    runs,
    control,
    queue,
    options,
    checkpoints: doorCheckpoints(sink, state, options),
  }
}

/**
 * What every door class shares: the layers it stands on, its options, its deps, and the wait for
 * its stored checkpoint writes. A door adds its protocol's entries over `deps`.
 */
export abstract class DoorBase<O, S, D extends DoorDeps<O, S> = DoorDeps<O, S>> {
  readonly sink: LucidTokenStreamSink
  readonly driver: RunDriver
  readonly parking: Parking
  readonly runs: DoorRunStore
  /** Run control: what the door's stop route stops a run through. */
  readonly control: RunControl
  readonly queue: RunQueue
  readonly options: O
  protected readonly deps: D

  constructor(deps: D) {
    this.deps = deps
    this.sink = deps.sink
    this.driver = deps.driver
    this.parking = deps.parking
    this.runs = deps.runs
    this.control =
      deps.control ??
      new RunControl({
        sink: deps.sink,
        driver: deps.driver,
        runs: deps.runs,
        reads: new ParkingReads(
          new ParkingTables(() => sinkInternals(deps.sink).client, deps.sink.tables)
        ),
        decisions: deps.parking.decisions,
      })
    this.queue = deps.queue
    this.options = deps.options
  }

  /** Resolves once this door's stored checkpoint writes in flight are done (tests, benchmarks). */
  async checkpointWrites() {
    await this.deps.checkpoints?.stored?.settled()
  }
}
