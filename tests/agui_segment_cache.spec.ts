import { test } from '@japa/runner'
import { AgUiDoor, type AgUiReply, type SseItem } from '../src/agui/door/index.js'
import { aguiShape, replayInto } from '../src/agui/door/translation.js'
import { FrameTranslator, type TranslatorCheckpoint } from '../src/agui/translate/index.js'
import { TranslatorCheckpoints } from '../src/checkpoints/index.js'
import { translationKey } from '../src/door/index.js'
import type { LucidSinkWriter } from '../src/sink/writer.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { setupRunner } from './helpers/parking.js'
import { runId } from './helpers/sink.js'

/**
 * What a replica keeps to make a re-attach cheap (the door's stream facts and translator
 * checkpoints) never changes what it serves: every re-attach through a door that has served the
 * stream before (warm) is compared with the same re-attach through a door that never saw it
 * (cold), while the run grows, after a new segment, after a purge and a stream opened again
 * under the same id, and with a stored row that no longer matches a checkpoint.
 */

async function setup() {
  const stack = await setupRunner(scriptedAgent())
  // With the transcript on, a state kept for other frames would show in MESSAGES_SNAPSHOT.
  const options = { checkpointEvery: 2, messagesSnapshot: true }
  const warm = new AgUiDoor(
    {
      sink: stack.sink,
      driver: stack.driver,
      parking: stack.parking,
      runs: stack.door.runs,
      queue: stack.queue,
    },
    options
  )
  /** A door with nothing kept: what a replica that never saw the stream serves. */
  const cold = () =>
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
  return { ...stack, warm, cold }
}

async function record(stack: Awaited<ReturnType<typeof setup>>, id: string, afterSeq = 0) {
  const run = `${id}-r${afterSeq}`
  await stack.door.runs.insert({
    runId: run,
    threadId: id,
    streamRunId: id,
    afterSeq,
    kind: afterSeq === 0 ? 'start' : 'resume',
    resumeHash: null,
    ownerId: null,
  })
  return run
}

/** The reply's events, all of them, or the first `limit` (then the reply is let go). */
async function served(reply: AgUiReply, limit = Number.POSITIVE_INFINITY) {
  if (reply.kind === 'refused') return reply.status
  const out: SseItem[] = []
  for await (const item of reply.events) {
    out.push(item)
    if (out.length >= limit) break
  }
  return out
}

async function writeSome(writer: LucidSinkWriter, from: number, count: number, word = 'word') {
  for (let i = from; i < from + count; i++) {
    await writer.write({ t: 'text', v: `${word} ${i}. ` })
    await writer.flush()
    await writer.write({
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: `call_${i}`,
        name: 'search',
        input: { i },
        toolKind: 'read',
      },
    })
    await writer.write({ t: 'event', event: { kind: 'tool-output', id: `call_${i}`, output: i } })
  }
}

const types = (items: SseItem[] | number) =>
  typeof items === 'number' ? [] : items.map((item) => item.event.type)

test.group('AG-UI door: what a replica keeps never changes what it serves', () => {
  test('a run that grows: re-attached while written, then after it ended', async ({ assert }) => {
    const stack = await setup()
    const id = runId('grow')
    const writer = await stack.sink.open(id)
    await writeSome(writer, 0, 6)
    const run = await record(stack, id)
    // While it is written: a few events from several cursors (the segment has no end yet).
    for (const after of ['3', '7', '12']) {
      const items = await served(await stack.warm.reattach(run, after, null), 3)
      assert.deepEqual(items, await served(await stack.cold().reattach(run, after, null), 3))
    }
    await writeSome(writer, 6, 6, 'later')
    await writer.end()
    for (const after of [undefined, '3', '7', '12', '20']) {
      const warm = await served(await stack.warm.reattach(run, after, null))
      assert.deepEqual(warm, await served(await stack.cold().reattach(run, after, null)), after)
      assert.equal(types(warm).at(-1), 'RUN_FINISHED')
      assert.include(JSON.stringify(warm), 'later 11. ')
    }
  })

  test('a new segment: the first run still ends where it did, the next one is served', async ({
    assert,
  }) => {
    const stack = await setup()
    const id = runId('segment')
    let writer = await stack.sink.open(id)
    await writeSome(writer, 0, 4)
    await writer.end()
    const end = (await stack.sink.head(id))!.lastSeq
    const first = await record(stack, id)
    const before = await served(await stack.warm.reattach(first, '5', null))
    assert.equal(types(before).at(-1), 'RUN_FINISHED')
    writer = await stack.sink.open(id)
    await writeSome(writer, 4, 4, 'second')
    await writer.end()
    const next = await record(stack, id, end)
    for (const after of [undefined, '5', String(end - 1)]) {
      const warm = await served(await stack.warm.reattach(first, after, null))
      assert.deepEqual(warm, await served(await stack.cold().reattach(first, after, null)))
      assert.notInclude(JSON.stringify(warm), 'second')
    }
    assert.deepEqual(await served(await stack.warm.reattach(first, '5', null)), before)
    for (const after of [undefined, String(end + 4)]) {
      const warm = await served(await stack.warm.reattach(next, after, null))
      assert.deepEqual(warm, await served(await stack.cold().reattach(next, after, null)))
      assert.include(JSON.stringify(warm), 'second 7. ')
      assert.equal(types(warm).at(-1), 'RUN_FINISHED')
    }
  })

  test('a purge: 404, then a stream opened again under the same id is served as itself', async ({
    assert,
  }) => {
    const stack = await setup()
    const id = runId('purge')
    const writer = await stack.sink.open(id)
    await writeSome(writer, 0, 6, 'old')
    await writer.end()
    const run = await record(stack, id)
    for (const after of [undefined, '9', '15'])
      await served(await stack.warm.reattach(run, after, null))
    assert.equal(await stack.sink.purge({ olderThanMs: -1000 }), 1)
    assert.equal(await served(await stack.warm.reattach(run, '9', null)), 404)
    // The same id again, other frames (the stream's row is another incarnation).
    await new Promise((resolve) => setTimeout(resolve, 5))
    const again = await stack.sink.open(id)
    await writeSome(again, 0, 5, 'new')
    await again.end()
    // The purge removed the run's row with its stream: the client records it again.
    assert.equal(await record(stack, id), run)
    for (const after of [undefined, '9', '15']) {
      const warm = await served(await stack.warm.reattach(run, after, null))
      assert.isArray(warm)
      assert.deepEqual(warm, await served(await stack.cold().reattach(run, after, null)))
      assert.notInclude(JSON.stringify(warm), 'old ')
    }
  })

  test('a checkpoint whose row is not the stored one is discarded, never served', async ({
    assert,
  }) => {
    const stack = await setup()
    const id = runId('mismatch')
    const writer = await stack.sink.open(id)
    await writeSome(writer, 0, 6)
    await writer.end()
    const stream = await stack.sink.head(id)
    const deps = {
      sink: stack.sink,
      checkpoints: new TranslatorCheckpoints<TranslatorCheckpoint>(2),
    }
    const options = { streamRunId: id, messagesSnapshot: true }
    await replayInto(deps, new FrameTranslator(options), id, { seq: 15 }, stream)
    const key = translationKey(id, stream, aguiShape(new FrameTranslator(options)))
    const kept = deps.checkpoints.nearest(key, 12)
    assert.isNotNull(kept)
    // The row that checkpoint follows is no longer what it was (same stream, same incarnation).
    const row = await stack.db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('seq', kept!.seq)
      .first()
    const body =
      row.kind === 'text'
        ? 'rewritten text. '
        : JSON.stringify({
            t: 'event',
            event: {
              kind: 'tool-input-available',
              id: 'call_x',
              name: 'other',
              input: {},
              toolKind: 'read',
            },
          })
    await stack.db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('seq', kept!.seq)
      .update({ body })
    // A replay up to that row would start from that checkpoint (the nearest): it starts over.
    const until = { seq: kept!.seq }
    const warm = new FrameTranslator(options)
    await replayInto(deps, warm, id, until, stream)
    const fresh = new FrameTranslator(options)
    await replayInto({ sink: stack.sink }, fresh, id, until)
    assert.deepEqual(warm.checkpoint(), fresh.checkpoint())
    assert.deepEqual(warm.messages(), fresh.messages())
    // Every checkpoint of that stream went; the ones taken since follow the stored rows.
    const now = deps.checkpoints.nearest(key, kept!.seq)
    assert.isTrue(now === null || now.row !== kept!.row)
  })
})
