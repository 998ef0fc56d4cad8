import { setTimeout as sleep } from 'node:timers/promises'
import { compareCursors, START, type Cursor } from '../../core/cursor.js'
import type { DoorRun, DoorRunStore } from '../../store/door_runs.js'
import type { DurableSource, SourceBatch, SourceHead } from '../source.js'
import { threadCursor, threadPosition } from './thread_offset.js'

/** How often a live reader of a thread at its newest turn's end looks for the next turn (ms). */
export const NEXT_TURN_POLL_MS = 250

/**
 * A thread's stream as a Durable Stream in one dialect: its turns (`DoorRunStore.streams`, the
 * one rule of which runs are its turns: oldest first, rolled back ones left out), each its run
 * stream in that dialect (`runStream`), one after the other, at the positions of
 * `thread_offset.ts`. A turn's closing is not the thread's: a thread never closes (a next
 * message may always come), and a live reader at its newest turn's end waits for the next.
 */
export function threadSource(
  runs: Pick<DoorRunStore, 'streams'>,
  threadId: string,
  runStream: (streamRunId: string) => DurableSource
): DurableSource {
  const turnsOf = () => runs.streams(threadId)
  const head = async (): Promise<SourceHead> => {
    const turns = await turnsOf()
    if (turns.length === 0) return { tail: START, closed: false }
    const last = await runStream(turns.at(-1)!.streamRunId).head()
    return { tail: threadCursor({ turn: turns.length, cursor: last.tail }), closed: false }
  }
  return {
    contentType: 'application/json',
    json: true,
    head,
    has: async (cursor) => {
      const position = threadPosition(cursor)
      if (!position) return false
      if (position.turn === 0) return true
      const turns = await turnsOf()
      const turn = turns[position.turn - 1]
      return turn !== undefined && (await runStream(turn.streamRunId).has(position.cursor))
    },
    batches: (after, read) => threadBatches(turnsOf, runStream, after, read),
  }
}

async function* threadBatches(
  turnsOf: () => Promise<DoorRun[]>,
  runStream: (streamRunId: string) => DurableSource,
  after: Cursor,
  read: { live: boolean; signal?: AbortSignal }
): AsyncGenerator<SourceBatch> {
  const start = threadPosition(after)
  if (!start) return
  let turn = Math.max(start.turn, 1)
  let from = start.turn === 0 ? START : start.cursor
  let turns = await turnsOf()
  while (true) {
    if (turn > turns.length) {
      if (!read.live) return
      const next = await nextTurn(turnsOf, turns.length, read.signal)
      if (!next) return
      turns = next
    }
    const source = runStream(turns[turn - 1].streamRunId)
    let closed = false
    for await (const batch of source.batches(from, read)) {
      closed = batch.closed === true
      const next = threadCursor({ turn, cursor: batch.next })
      // A turn's closing at the position a reader is at moves nothing of the thread's.
      if (compareCursors(next, after) > 0) yield { messages: batch.messages ?? [], next }
    }
    if (!closed) return
    turn += 1
    from = START
  }
}

/** The thread's turns once there are more than `count` (polled), `null` once `signal` aborts. */
async function nextTurn(
  turnsOf: () => Promise<DoorRun[]>,
  count: number,
  signal?: AbortSignal
): Promise<DoorRun[] | null> {
  while (!signal?.aborted) {
    try {
      await sleep(NEXT_TURN_POLL_MS, undefined, { signal })
    } catch {
      return null
    }
    const turns = await turnsOf()
    if (turns.length > count) return turns
  }
  return null
}
