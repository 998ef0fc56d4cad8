import { test } from '@japa/runner'
import fc from 'fast-check'
import { AgUiDoor, type AgUiReply, type SseItem } from '../src/agui/door/index.js'
import { START, parseCursor, type Cursor } from '../src/core/cursor.js'
import type { LucidSinkWriter } from '../src/sink/writer.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { doorCheckpoints } from '../src/door/index.js'
import { UI_MESSAGE_STATE } from '../src/ui_message/door/state_codec.js'
import type { UiChunkItem, UiDoorDeps } from '../src/ui_message/door/reply.js'
import { turnChunks } from '../src/ui_message/door/turn.js'
import { dropCheckpointsTable } from '../src/store/schema.js'
import {
  checkpointKey,
  prefetchCheckpoint,
  QUEUED,
  StoredCheckpoints,
  type CheckpointRowStore,
} from '../src/checkpoints/index.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { CheckpointRows } from '../src/store/checkpoint_rows.js'
import { setupRunner } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { checkpointHeldUntilRead } from './helpers/frames_reads.js'

/**
 * Stored translator checkpoints (the `checkpoints` table): a door that never served a stream (a
 * restarted replica, another one behind the load balancer) re-attaches from the nearest stored
 * checkpoint, not the stream's start, and serves exactly what a translation from the start
 * serves; one whose row changed is deleted and never served; a purge deletes a stream's; a
 * missing table leaves re-attach working, from memory.
 */

const SPACING = { checkpointEvery: 2, storedCheckpointEvery: 8 }

async function setup(onError?: (error: unknown) => void) {
  const stack = await setupRunner(scriptedAgent(), { onError })
  const newDoor = (options: object = SPACING) =>
    new AgUiDoor(
      {
        sink: stack.sink,
        driver: stack.driver,
        parking: stack.parking,
        runs: stack.door.runs,
        queue: stack.queue,
      },
      options
    )
  /** What the replays into translators read, in rows (the silent part of a re-attach, up to a cursor). */
  const reads = { rows: 0 }
  const replay = stack.sink.replay.bind(stack.sink)
  stack.sink.replay = ((id: string, options: any = {}) => {
    const items = replay(id, options)
    if (options.growing || !(options.until?.seq < Number.MAX_SAFE_INTEGER)) return items
    return (async function* () {
      for await (const item of items) {
        reads.rows++
        yield item
      }
    })()
  }) as typeof stack.sink.replay
  return { ...stack, newDoor, reads }
}

async function writeSome(writer: LucidSinkWriter, count: number) {
  for (let i = 0; i < count; i++) {
    await writer.write({ t: 'text', v: `word ${i}. ` })
    await writer.flush()
    await writer.write({
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: `c${i}`,
        name: 'search',
        input: { i },
        toolKind: 'read',
      },
    })
    await writer.write({ t: 'event', event: { kind: 'tool-output', id: `c${i}`, output: i } })
    // One component replaced again and again (superseded rows), and one of its own.
    await writer.write({ t: 'component', name: 'progress', id: 'progress', data: { i } })
    if (i % 2 === 0)
      await writer.write({ t: 'component', name: 'card', id: `card_${i}`, data: { i } })
  }
}

async function served(reply: AgUiReply) {
  if (reply.kind === 'refused') return reply.status
  const out: SseItem[] = []
  for await (const item of reply.events) out.push(item)
  return out
}

/** A run of `units` x 3 rows, recorded as one AG-UI run; `warm` served it whole (storing). */
async function longRun(stack: Awaited<ReturnType<typeof setup>>, units: number) {
  const id = runId('stored')
  const writer = await stack.sink.open(id)
  await writeSome(writer, units)
  await writer.end()
  const run = `${id}-r0`
  await stack.door.runs.insert({
    runId: run,
    threadId: id,
    streamRunId: id,
    afterSeq: 0,
    kind: 'start',
    resumeHash: null,
    ownerId: null,
  })
  const warm = stack.newDoor()
  await served(await warm.reattach(run, undefined, null))
  await warm.checkpointWrites()
  return { id, run, last: (await stack.sink.head(id))!.lastSeq }
}

const storedOf = (stack: Awaited<ReturnType<typeof setup>>, id: string) =>
  stack.db.connection().from('agent_stream_checkpoints').where('run_id', id).orderBy('seq')

test.group('Stored checkpoints: AG-UI door', () => {
  test('a door that never served the run re-attaches from a stored checkpoint at any cursor', async ({
    assert,
  }) => {
    const stack = await setup()
    const { id, run, last } = await longRun(stack, 26)
    const rows = await storedOf(stack, id)
    assert.isAbove(rows.length, 5)
    let read = 0
    let cursors = 0
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: last - 1 }), async (seq) => {
        // A fresh door (nothing in memory) and one that translates from the start.
        const fromStart = await served(
          await stack
            .newDoor({ checkpointEvery: 2, storedCheckpointEvery: 0 })
            .reattach(run, String(seq), null)
        )
        stack.reads.rows = 0
        const fresh = stack.newDoor()
        const got = await served(await fresh.reattach(run, String(seq), null))
        await fresh.checkpointWrites()
        assert.deepEqual(got, fromStart, String(seq))
        // From the nearest stored one (every 8 rows, at a final row): a few rows, not `seq`.
        assert.isAtMost(stack.reads.rows, 12, String(seq))
        read += stack.reads.rows
        cursors += seq
      }),
      { numRuns: 25 }
    )
    assert.isBelow(read, cursors / 4)
  }).timeout(120_000)

  test('a stored checkpoint whose row changed is deleted and never served', async ({ assert }) => {
    const stack = await setup()
    const { id, run, last } = await longRun(stack, 12)
    const rows = await storedOf(stack, id)
    const kept = rows.at(-2)
    assert.exists(kept)
    // The row it follows is not what it was any more (same stream, same incarnation).
    const frame = await stack.db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('seq', kept.seq)
      .first()
    const body =
      frame.kind === 'text'
        ? 'rewritten. '
        : JSON.stringify({ t: 'event', event: { kind: 'title', title: 'rewritten' } })
    await stack.db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('seq', kept.seq)
      .update({ body })
    const at = String(Math.min(last - 1, kept.seq + 1))
    const fromStart = await served(
      await stack.newDoor({ storedCheckpointEvery: 0 }).reattach(run, at, null)
    )
    stack.reads.rows = 0
    const fresh = stack.newDoor()
    const got = await served(await fresh.reattach(run, at, null))
    await fresh.checkpointWrites()
    assert.deepEqual(got, fromStart)
    // It read the changed row, then started over from the start.
    assert.isAbove(stack.reads.rows, kept.seq)
    const now = await storedOf(stack, id)
    assert.isFalse(now.some((row: any) => row.seq === kept.seq && row.row === kept.row))
    // Another fresh door is served the same (from what was stored since, or the start).
    assert.deepEqual(await served(await stack.newDoor().reattach(run, at, null)), fromStart)
  }).timeout(60_000)

  test('a purge deletes the stream checkpoints', async ({ assert }) => {
    const stack = await setup()
    const { id } = await longRun(stack, 8)
    const other = await longRun(stack, 8)
    assert.isAbove((await storedOf(stack, id)).length, 0)
    await stack.db
      .connection()
      .from('agent_streams')
      .where('run_id', id)
      .update({ ended_at: Date.now() - 10_000 })
    await stack.db
      .connection()
      .from('agent_streams')
      .where('run_id', other.id)
      .update({ ended_at: Date.now() + 60_000 })
    // What a write racing a removal leaves: rows of a stream that is gone, and of an earlier
    // incarnation of one that exists.
    const [kept] = await storedOf(stack, other.id)
    const orphan = (stream: string, incarnation: number) => ({
      ...kept,
      run_id: stream,
      incarnation,
      seq: 999_999,
    })
    await stack.db
      .connection()
      .insertQuery()
      .table('agent_stream_checkpoints')
      .multiInsert([orphan('gone-stream', 1), orphan(other.id, 1)])
    assert.equal(await stack.sink.purge({ olderThanMs: 1000 }), 1)
    assert.lengthOf(await storedOf(stack, id), 0)
    assert.lengthOf(await storedOf(stack, 'gone-stream'), 0)
    const left = await storedOf(stack, other.id)
    assert.isAbove(left.length, 0)
    assert.isFalse(left.some((row: any) => Number(row.seq) === 999_999))
  }).timeout(60_000)

  test('a missing table: re-attach works from memory; one warning, then no more tries', async ({
    assert,
  }) => {
    const errors: unknown[] = []
    const stack = await setup((error) => errors.push(error))
    await dropCheckpointsTable(stack.db.connection().schema)
    const { run, last } = await longRun(stack, 10)
    assert.lengthOf(errors, 1)
    assert.match(String((errors[0] as Error).message), /checkpoints table does not exist/)
    const door = stack.newDoor()
    for (const seq of [5, 17, last - 1, 9]) {
      const fromStart = await served(
        await stack.newDoor({ storedCheckpointEvery: 0 }).reattach(run, String(seq), null)
      )
      assert.deepEqual(await served(await door.reattach(run, String(seq), null)), fromStart)
      await door.checkpointWrites()
    }
    // This door warned once too; nothing after its first failure.
    assert.lengthOf(errors, 2)
    // A purge does not trip on the missing table.
    await stack.db
      .connection()
      .from('agent_streams')
      .update({ ended_at: Date.now() - 10_000 })
    assert.isAbove(await stack.sink.purge({ olderThanMs: 1000 }), 0)
  }).timeout(60_000)
})

test.group('Stored checkpoints: one round trip (issue 26)', () => {
  test('a re-attach reads the rows after the stored checkpoint beside it, not once it has it', async ({
    assert,
  }) => {
    const stack = await setup()
    const { id, run } = await longRun(stack, 26)
    // A cursor just past a stored checkpoint that sits at or after the last multiple of the
    // stored spacing (8) before the cursor: where the rows are read ahead from.
    const seqs = (await storedOf(stack, id)).map((row: { seq: number | string }) => Number(row.seq))
    const kept = seqs.find((seq) => seq >= 16 && seq % 8 < 6)
    assert.exists(kept, JSON.stringify(seqs))
    const cursor = kept! + 1
    const from = Math.floor(cursor / 8) * 8
    const fromStart = await served(
      await stack
        .newDoor({ checkpointEvery: 2, storedCheckpointEvery: 0 })
        .reattach(run, String(cursor), null)
    )
    const fresh = stack.newDoor()
    // The stored checkpoint's read answers only once the frames read from `from` started (or
    // a second passed): read after it, as before, it would not have started by then.
    const rows = (
      fresh as unknown as { deps: { checkpoints: { stored: StoredCheckpoints<unknown> } } }
    ).deps.checkpoints.stored.rows
    const held = checkpointHeldUntilRead(stack.db, rows, from - 1)
    try {
      stack.reads.rows = 0
      const got = await served(await fresh.reattach(run, String(cursor), null))
      assert.deepEqual(got, fromStart)
      assert.isTrue(held.beside())
      // Only the rows from there were read: the stored checkpoint served.
      assert.isAtMost(stack.reads.rows, cursor - from + 1)
    } finally {
      held.stop()
      await fresh.checkpointWrites()
    }
  }).timeout(60_000)
})

test.group('Stored checkpoints: rows read ahead', () => {
  test('rows read ahead that no re-attach takes are let go within a second', async ({ assert }) => {
    const stack = await setup()
    const { id, last } = await longRun(stack, 12)
    const checkpoints = doorCheckpoints(stack.sink, UI_MESSAGE_STATE, SPACING)
    let reads = 0
    let released = 0
    const sink = {
      replay: (streamRunId: string, options: object) =>
        (async function* () {
          reads++
          try {
            yield* stack.sink.replay(streamRunId, options)
          } finally {
            released++
          }
        })(),
    } as unknown as typeof stack.sink
    const key = checkpointKey(id, (await stack.sink.head(id))!.createdAt, {})
    prefetchCheckpoint({ sink, checkpoints, key, read: {} }, id, { seq: last - 1 })
    assert.equal(reads, 1)
    assert.equal(released, 0)
    // Nobody took them: the read ends, its page not held.
    await new Promise((resolve) => setTimeout(resolve, 1_300))
    assert.equal(released, 1)
    await checkpoints.stored!.settled()
  }).timeout(10_000)
})

test.group('Stored checkpoints: useChat door', () => {
  async function chunksFrom(deps: UiDoorDeps, id: string, from: Cursor) {
    const out: UiChunkItem[] = []
    for await (const item of turnChunks(deps, id, from)) out.push(item)
    return out
  }

  test('a door that never served the turn resumes from a stored checkpoint at any cursor', async ({
    assert,
  }) => {
    const stack = await setup()
    const depsOf = (checkpoints: UiDoorDeps['checkpoints']): UiDoorDeps => ({
      sink: stack.sink,
      driver: stack.driver,
      parking: stack.parking,
      runs: stack.door.runs,
      queue: stack.door.queue,
      options: {},
      checkpoints,
    })
    const id = runId('uc-stored')
    const writer = await stack.sink.open(id)
    await writeSome(writer, 26)
    await writer.end()
    const cursors: string[] = []
    for await (const item of stack.sink.replay(id)) cursors.push(item.cursor)
    const warm = doorCheckpoints(stack.sink, UI_MESSAGE_STATE, SPACING)
    await chunksFrom(depsOf(warm), id, START)
    await warm.stored!.settled()
    assert.isAbove((await storedOf(stack, id)).length, 5)
    let read = 0
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: cursors.length - 2 }), async (index) => {
        const cursor = parseCursor(cursors[index])
        const fromStart = await chunksFrom(depsOf(undefined), id, cursor)
        stack.reads.rows = 0
        const fresh = doorCheckpoints(stack.sink, UI_MESSAGE_STATE, SPACING)
        assert.deepEqual(await chunksFrom(depsOf(fresh), id, cursor), fromStart, cursors[index])
        await fresh.stored!.settled()
        assert.isAtMost(stack.reads.rows, 12, cursors[index])
        read += stack.reads.rows
      }),
      { numRuns: 20 }
    )
    assert.isBelow(read, 20 * 12)
  }).timeout(120_000)
})

test.group('Stored checkpoints: writes waiting', () => {
  test('a checkpoint skipped because its stream has too many writes waiting is told, once a stream', async ({
    assert,
  }) => {
    const stack = await setup()
    const id = runId('queued')
    const writer = await stack.sink.open(id)
    await writeSome(writer, 2)
    await writer.end()
    const incarnation = (await stack.sink.head(id))!.createdAt
    // The real rows on the test database, their writes held until `release` (a slow database).
    const rows = new CheckpointRows(() => sinkInternals(stack.sink).client, stack.sink.tables)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const slow: CheckpointRowStore = {
      nearest: rows.nearest.bind(rows),
      discard: rows.discard.bind(rows),
      isMissingTable: rows.isMissingTable.bind(rows),
      save: async (...args) => {
        await held
        return rows.save(...args)
      },
    }
    const errors: any[] = []
    const stored = new StoredCheckpoints(slow, UI_MESSAGE_STATE.codec, 'test', {
      every: 1,
      onError: (error) => errors.push(error),
    })
    const key = checkpointKey(id, incarnation, {})
    // QUEUED offered at once wait (none has started): the next three are skipped, told once.
    for (let seq = 1; seq <= QUEUED + 3; seq++) stored.offer(key, seq, `fp${seq}`, '{}')
    assert.lengthOf(errors, 1)
    assert.equal(errors[0].code, 'checkpoint_queue_full')
    assert.equal(errors[0].streamRunId, id)
    assert.equal(errors[0].seq, QUEUED + 1)
    assert.notInclude(errors[0].message, 'fp')
    release()
    await stored.settled()
    assert.lengthOf(await storedOf(stack, id), QUEUED)
    // Another stream is told of its own; this one not again.
    const other = checkpointKey(`${id}-other`, incarnation, {})
    const blocked = new Promise<void>(() => {})
    const stuck = new StoredCheckpoints(
      { ...slow, save: () => blocked },
      UI_MESSAGE_STATE.codec,
      'test',
      { every: 1, onError: (error) => errors.push(error) }
    )
    for (let seq = 1; seq <= QUEUED + 3; seq++) {
      stuck.offer(key, seq, `fp${seq}`, '{}')
      stuck.offer(other, seq, `fp${seq}`, '{}')
    }
    assert.deepEqual(
      errors.slice(1).map((error) => error.streamRunId),
      [id, `${id}-other`]
    )
  }).timeout(60_000)
})
