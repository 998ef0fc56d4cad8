import { describeIssues, InvalidAgUiInputError, RunFinishedError } from '../errors.js'
import type { RunControl } from '../runner/run_control.js'
import type { Principal } from '../core/run.js'
import type { DoorRun } from '../store/door_runs.js'
import type { RunQueue } from '../runner/run_queue.js'
import { TURN_TAKEN } from '../runner/door_runs.js'
import { readAfterSegmentEnd } from './verdict.js'
import { refused } from './refusals.js'
import type { Parking } from '../parking/parking.js'
import type { Refused } from './reply.js'

/**
 * The busy-thread policy ("double texting"; LangGraph's `multitask_strategy`): what a door does
 * with a new message on a thread whose run is talking. `reject`: 409 `thread_busy` naming that
 * run, nothing written; `enqueue`: the message waits in the thread's queue and starts when the
 * run ends (`runner/run_queue.ts`); `interrupt` / `rollback`: the run is stopped (its turn kept,
 * or removed from the conversation), then the message starts.
 */
export const MULTITASK_STRATEGIES = ['reject', 'enqueue', 'interrupt', 'rollback'] as const

export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number]

/** Whether `value` is one of {@link MULTITASK_STRATEGIES}. */
export function isMultitaskStrategy(value: unknown): value is MultitaskStrategy {
  return (MULTITASK_STRATEGIES as readonly unknown[]).includes(value)
}

/**
 * The strategy a request asks for (`requested`, from where its protocol carries it: `field`
 * names it), else the route's `fallback`. A value that is not one of the four is refused before
 * anything is written (400 `invalid_input`, rule `multitaskStrategy`; the value is not quoted).
 *
 * @throws InvalidAgUiInputError
 */
export function multitaskStrategyOf(
  requested: unknown,
  fallback: MultitaskStrategy,
  subject: string,
  field: string
): MultitaskStrategy {
  if (requested === undefined) return fallback
  if (isMultitaskStrategy(requested)) return requested
  throw new InvalidAgUiInputError(describeIssues(subject, [{ field, rule: 'multitaskStrategy' }]))
}

/** What a door asks to tell whether a thread is busy. */
export interface BusyDeps {
  parking: { queries: Pick<Parking['queries'], 'streamAfter'> }
  queue: Pick<RunQueue, 'length'>
}

/**
 * The run `latest` (a thread's newest) keeps the thread busy with, or `null` when the thread
 * takes a new run now: busy while its stream is open or about to go on (a resume claimed, or
 * decided and waiting for a claim), or while messages wait in the thread's queue (they go
 * first). A thread parked on unanswered items is not busy here: that is each door's own rule.
 */
export async function busyWith(deps: BusyDeps, latest: DoorRun | null): Promise<DoorRun | null> {
  if (!latest) return null
  const { verdict } = await readAfterSegmentEnd(deps, latest.streamRunId)
  if (verdict === 'goes-on') return latest
  if (verdict === 'waits') return null
  return (await deps.queue.length(latest.threadId)) > 0 ? latest : null
}

/** `reject`: 409 `thread_busy` naming the run the thread is busy with (nothing written). */
export function threadBusy(run: DoorRun): Refused {
  return {
    ...refused(409, 'thread_busy', 'This thread is busy with a run: send again once it has ended.'),
    runId: run.runId,
  }
}

/**
 * What a message asks once judged again because another message's run took the thread's turn
 * first (two at once): a strategy that stops first waits instead (`enqueue`): it stopped the run
 * it saw; the one that won started after it arrived, and is not its to stop.
 */
const afterTurnLost = (strategy: MultitaskStrategy): MultitaskStrategy =>
  strategy === 'interrupt' || strategy === 'rollback' ? 'enqueue' : strategy

/** How many times a message that lost its thread's turn to another is judged. */
const TURN_ATTEMPTS = 3

/**
 * Judge a new message until it gets its thread's turn, for every door: two at once, the one
 * whose run was recorded second ({@link TURN_TAKEN}) is judged again against the thread as it is
 * now, a few times at most. `judge` is given the strategy to apply to what was asked: the same
 * on the first attempt, then {@link afterTurnLost}'s. Past the last: {@link turnLost}.
 */
export async function judgeForTurn<R>(
  judge: (
    strategyOf: (asked: MultitaskStrategy) => MultitaskStrategy
  ) => Promise<R | typeof TURN_TAKEN>,
  latest: () => Promise<DoorRun | null>
): Promise<R | Refused> {
  for (let attempt = 1; attempt <= TURN_ATTEMPTS; attempt++) {
    const reply = await judge(attempt === 1 ? (asked) => asked : afterTurnLost)
    if (reply !== TURN_TAKEN) return reply
  }
  return turnLost(await latest())
}

/** 409 `thread_busy` for a message that lost the thread's turn every time it was judged. */
export function turnLost(latest: DoorRun | null): Refused {
  return latest
    ? threadBusy(latest)
    : refused(409, 'thread_busy', 'This thread is busy with a run: send again once it has ended.')
}

/** `enqueue` on a thread whose queue holds its most: 409 `queue_full` (nothing written). */
export function queueFull(max: number): Refused {
  return refused(
    409,
    'queue_full',
    `This thread's queue holds ${max} messages already: send again once one has started.`
  )
}

/** A state of a queued message as its client waits: its place, then its run, or dropped. */
export type QueuedState = { place: number } | { run: DoorRun } | { dropped: true }

/**
 * A queued message as its client waits for it: its place now (again each time it moves), then
 * its run once one replica started it (or `dropped` when it will never start). Asked every
 * `pollMs`; a start on this replica wakes it at once. Ends when `signal` aborts.
 */
export async function* waitForStart(
  deps: { runs: { find(runId: string): Promise<DoorRun | null> }; queue: RunQueue },
  runId: string,
  pollMs: number,
  signal?: AbortSignal
): AsyncGenerator<QueuedState> {
  let last: number | null = null
  while (!signal?.aborted) {
    const run = await deps.runs.find(runId)
    if (run) {
      yield { run }
      return
    }
    const place = await deps.queue.placeOf(runId)
    if (place === null) {
      // Started between the two reads, or dropped.
      const started = await deps.runs.find(runId)
      yield started ? { run: started } : { dropped: true }
      return
    }
    if (place !== last) yield { place }
    last = place
    await deps.queue.startedHere(runId, pollMs, signal)
  }
}

/** Whether `strategy` stops the thread's run before the new message starts. */
export const stopsFirst = (strategy: MultitaskStrategy) =>
  strategy === 'interrupt' || strategy === 'rollback'

/**
 * `interrupt` / `rollback`: stop the run `busy` (talking or parked) as the person's own stop
 * would (`keep`, or `rollback`: its turn leaves the conversation), then let the new message
 * start. `null` once it ended (or had ended on its own meanwhile); 409 `thread_busy` when its
 * replica did not end it within the stop's wait (nothing started: send again).
 */
export async function stopBusy(
  control: RunControl,
  busy: DoorRun,
  principal: Principal | null,
  strategy: MultitaskStrategy
): Promise<Refused | null> {
  try {
    const mode = strategy === 'rollback' ? 'rollback' : 'keep'
    const outcome = await control.stop(busy.streamRunId, { principal, via: 'chat' }, mode)
    return outcome.status === 'cancelled' ? null : threadBusy(busy)
  } catch (error) {
    if (error instanceof RunFinishedError) return null
    throw error
  }
}

/**
 * THE busy-thread rule of every door, for a new message on a thread whose newest run is
 * `latest` (`parked`: it waits on unanswered items): a parked thread refuses it
 * (`'interrupt_pending'`, worded by the door) unless the strategy stops first; a busy one is
 * stopped (`interrupt`, `rollback`), refused (`reject`: `thread_busy`), or waited behind
 * (`enqueue`: `behind` is the run it waits for). `behind: null`: the message starts now.
 */
export async function admitMessage(
  deps: BusyDeps,
  control: RunControl,
  latest: DoorRun | null,
  parked: boolean,
  principal: Principal | null,
  strategy: MultitaskStrategy
): Promise<{ refused: Refused | 'interrupt_pending' } | { behind: DoorRun | null }> {
  if (parked && !stopsFirst(strategy)) return { refused: 'interrupt_pending' }
  const busy = parked ? latest : await busyWith(deps, latest)
  if (!busy) return { behind: null }
  if (stopsFirst(strategy)) {
    const still = await stopBusy(control, busy, principal, strategy)
    return still ? { refused: still } : { behind: null }
  }
  return strategy === 'enqueue' ? { behind: busy } : { refused: threadBusy(busy) }
}
