import { test } from '@japa/runner'
import type { Assert } from '@japa/assert'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Database } from '@adonisjs/lucid/database'
import { createRuntime, type RuntimeOptions } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { serveRuntime, toNode } from './helpers/fetch_node.js'
import { postJson, readUntil, runInput } from './helpers/http.js'
import { DoorRunStore } from '../src/store/door_runs.js'
import { tableNames } from '../src/store/schema.js'
import {
  checkpointHeldUntilRead,
  watchFramesReads,
  type FramesRead,
} from './helpers/frames_reads.js'
import type { StoredCheckpoints } from '../src/checkpoints/index.js'

/**
 * Issue 26, flat re-attach: a re-attach (AG-UI) or resume (useChat) at a cursor, on a replica
 * that never served the run, starts its follow's first reads (the stream's feed, the page after
 * the cursor) before it rebuilds its translator (`sink.prime`): the page after the cursor is
 * read beside the silent replay up to it, not in a round trip of its own after it. Counted
 * from the statements' start order (knex's `query` event), over HTTP on loopback.
 */

const ROWS = 60

/** `check` until it passes (it throws until then), at most 10 s; what it resolved. */
async function eventually<T>(check: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 10_000
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}
const gate = { held: Promise.resolve(), release: () => {} }

/** A run of `ROWS` rows (text and step ends by turns), then open until the test lets it end. */
const writer: AgentRunner = {
  name: 'writer',
  async start(ctx) {
    for (let i = 0; i < ROWS / 2; i++) {
      await ctx.writer.write({ t: 'text', v: `part ${i}. ` })
      await ctx.writer.write({ t: 'event', event: { kind: 'step-finish' } })
    }
    await gate.held
    return { status: 'finished' }
  },
  resume: async () => ({ status: 'finished' }),
}

const principal = (request: Request) => {
  const user = request.headers.get('x-user')
  return user ? { id: user } : null
}

function handlerOf(runtime: ReturnType<typeof createRuntime>) {
  const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
  const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal })
  return (request: Request) =>
    new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
}

/** A second replica on the same database: a runtime of its own, on its own port. */
async function replica(db: Database, options: Omit<RuntimeOptions, 'runner'> = {}) {
  const runtime = createRuntime(db, { ...options, runner: writer })
  const server = createServer(toNode(handlerOf(runtime)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runtime,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await runtime.sink.shutdown()
    },
  }
}

/** The frames reads the database is sent from now on, each as the rows it reads (`between`). */
function recordReads(db: Database) {
  const reads: FramesRead[] = []
  const stop = watchFramesReads(db, (read) => reads.push(read))
  return { reads, stop }
}

/** Read an SSE response until a block with an `id:` (an event after the cursor). */
const firstIdentified = (response: Response) =>
  readUntil(response, (text) => text.split('\n\n').find((b) => /(^|\n)id: /.test(b)))

/** Start an AG-UI run as alice. */
const aguiStart = (url: string, runId: string) =>
  postJson(
    `${url}/agui`,
    runInput(`thread-${randomUUID()}`, runId, {
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    })
  )

test.group('A re-attach primes its follow (issue 26)', (group) => {
  let served: Awaited<ReturnType<typeof serveRuntime>>
  group.each.setup(async () => {
    gate.held = new Promise<void>((resolve) => (gate.release = resolve))
    served = await serveRuntime({ runner: writer }, (runtime) => handlerOf(runtime))
    return async () => {
      gate.release()
      await served.close()
    }
  })

  /** Start a run through `post`, and wait until its rows are stored; its stream's run id. */
  async function started(post: () => Promise<Response>, streamRunId: () => Promise<string>) {
    const response = await post()
    void response.body?.cancel().catch(() => {})
    const id = await eventually(streamRunId)
    await eventually(async () => {
      const head = await served.runtime.sink.head(id)
      if (!head || head.lastSeq < ROWS) throw new Error('not stored yet')
    })
    return id
  }

  /** A useChat start of chat `chatId` as alice, and how to find its stream (for `started`). */
  const chatStart = (chatId: string) =>
    [
      () =>
        postJson(`${served.url}/chat`, {
          id: chatId,
          trigger: 'submit-message',
          messages: [
            { id: `u-${randomUUID()}`, role: 'user', parts: [{ type: 'text', text: 'Go' }] },
          ],
        }),
      async () => {
        const runs = new DoorRunStore(() => served.db.connection(), tableNames())
        const latest = await runs.latest(chatId)
        if (!latest) throw new Error('no run yet')
        return latest.streamRunId
      },
    ] as const

  /** Re-attach through `path(cursor)` on a fresh replica; the reads it sent, in start order. */
  async function reattach(cursor: number, path: (cursor: number) => string) {
    const other = await replica(served.db)
    const recorder = recordReads(served.db)
    try {
      const response = await fetch(`${other.url}${path(cursor)}`, {
        headers: { 'x-user': 'alice', 'accept': 'text/event-stream' },
      })
      const block = await firstIdentified(response)
      return { block, reads: recorder.reads, other }
    } finally {
      recorder.stop()
      await other.close()
    }
  }

  function assertPrimed(assert: any, reads: { from: number; to: number }[], cursor: number) {
    const message = `frames reads, in order: ${JSON.stringify(reads)}`
    // The silent replay reads up to the cursor; the follow's first page from it.
    const replay = reads.findIndex((r) => r.from < cursor && r.to === cursor)
    const page = reads.findIndex((r) => r.from === cursor && r.to > cursor)
    assert.isAtLeast(replay, 0, message)
    assert.isAtLeast(page, 0, message)
    assert.isBelow(page, replay, message)
    // The follow served from that page: it read none of its own from the cursor.
    assert.lengthOf(
      reads.filter((r) => r.from === cursor),
      1,
      message
    )
  }

  test('AG-UI: the page after the cursor is read before the replay up to it', async ({
    assert,
  }) => {
    const runId = `run-${randomUUID()}`
    const id = await started(
      () => aguiStart(served.url, runId),
      async () => runId
    )
    const cursor = 40
    const { block, reads } = await reattach(cursor, (after) => `/agui/runs/${id}?after=${after}`)
    assert.match(block, /(^|\n)id: 41(\n|$)/)
    assertPrimed(assert, reads, cursor)
  }).timeout(30_000)

  test('useChat: the page after the cursor is read before the replay up to it', async ({
    assert,
  }) => {
    const chatId = `chat-${randomUUID()}`
    await started(...chatStart(chatId))
    const cursor = 40
    const { block, reads } = await reattach(
      cursor,
      (after) => `/chat/${chatId}/stream?after=${after}`
    )
    assert.match(block, /(^|\n)id: 41(\n|$)/)
    assertPrimed(assert, reads, cursor)
  }).timeout(30_000)

  /**
   * A re-attach through `path(cursor)` on a fresh replica, at a cursor just past a stored
   * checkpoint (spacing 8), asserted: its first event is the one after the cursor, and the rows
   * after the checkpoint were read from the last multiple of 8 before the cursor while the
   * stored checkpoint's read was out (its answer is held until that read starts, or a second
   * passed: read once it had it, as before, they would not have started).
   */
  async function readAhead(
    assert: Assert,
    path: (cursor: number) => string,
    streamRunId: string,
    doorOf: (runtime: ReturnType<typeof createRuntime>) => object
  ) {
    const spacing = { agui: { checkpointEvery: 2, storedCheckpointEvery: 8 } }
    // A replica serves the run whole: it stores checkpoints every 8 rows (read until they are).
    const warm = await replica(served.db, spacing)
    const stored = () =>
      served.db.connection().from('agent_stream_checkpoints').where('run_id', streamRunId)
    let seqs: number[] = []
    try {
      const whole = await fetch(`${warm.url}${path(0)}`, { headers: { 'x-user': 'alice' } })
      assert.equal(whole.status, 200)
      void whole.body!.pipeTo(new WritableStream()).catch(() => {})
      seqs = await eventually(async () => {
        const found = (await stored()).map((row: { seq: number | string }) => Number(row.seq))
        if (!found.some((seq) => seq >= 40)) throw new Error(`stored so far: ${found}`)
        return found
      })
      await warm.runtime.door.checkpointWrites()
      await warm.runtime.uiMessage.checkpointWrites()
    } finally {
      await warm.close()
    }
    seqs = (await stored()).map((row: { seq: number | string }) => Number(row.seq))
    const kept = [...new Set(seqs)].find((seq) => seq >= 16 && seq % 8 < 6 && seq < ROWS - 2)
    if (kept === undefined) throw new Error(`no stored checkpoint to re-attach past: ${seqs}`)
    const cursor = kept + 1
    const from = Math.floor(cursor / 8) * 8
    const fresh = await replica(served.db, spacing)
    const door = doorOf(fresh.runtime) as {
      deps: { checkpoints: { stored: StoredCheckpoints<unknown> } }
    }
    const held = checkpointHeldUntilRead(served.db, door.deps.checkpoints.stored.rows, from - 1)
    try {
      const response = await fetch(`${fresh.url}${path(cursor)}`, {
        headers: { 'x-user': 'alice', 'accept': 'text/event-stream' },
      })
      const block = await firstIdentified(response)
      // The first event after the cursor, its rows read beside the stored checkpoint.
      assert.match(block, new RegExp(`(^|\\n)id: ${cursor + 1}(\\n|$)`))
      assert.isTrue(held.beside())
    } finally {
      held.stop()
      await fresh.close()
    }
  }

  test('AG-UI: the rows after a stored checkpoint are read beside it, not once it has it', async ({
    assert,
  }) => {
    const runId = `run-${randomUUID()}`
    await started(
      () => aguiStart(served.url, runId),
      async () => runId
    )
    await readAhead(
      assert,
      (after) => (after ? `/agui/runs/${runId}?after=${after}` : `/agui/runs/${runId}`),
      runId,
      (runtime) => runtime.door
    )
  }).timeout(30_000)

  test('useChat: the rows after a stored checkpoint are read beside it, not once it has it', async ({
    assert,
  }) => {
    const chatId = `chat-${randomUUID()}`
    const streamRunId = await started(...chatStart(chatId))
    await readAhead(
      assert,
      (after) => `/chat/${chatId}/stream?after=${after}`,
      streamRunId,
      (runtime) => runtime.uiMessage
    )
  }).timeout(30_000)

  test('a prime nobody follows lets its feed go; one followed is the follow own', async ({
    assert,
  }) => {
    const runId = `run-${randomUUID()}`
    await started(
      () => aguiStart(served.url, runId),
      async () => runId
    )
    const other = await replica(served.db)
    try {
      const { sink } = other.runtime
      const tail = sinkInternals(sink).tail
      /** The first three cursors a follow from `after` (given `primed`, or none) yields. */
      const firstThree = async (after: number, primed?: ReturnType<typeof sink.prime>) => {
        const cursors: string[] = []
        for await (const item of sink.segments(runId, { after: { seq: after }, primed })) {
          cursors.push(item.cursor)
          if (cursors.length === 3) break
        }
        return cursors
      }
      const unprimed = { 20: await firstThree(20), 30: await firstThree(30) }
      await eventually(async () => assert.isFalse(tail.following(runId)))
      // Released without a follow: the feed goes once it is ready.
      const unused = sink.prime(runId, { seq: 10 })
      assert.isTrue(tail.following(runId))
      unused.release()
      await eventually(async () => assert.isFalse(tail.following(runId)))
      // A follow from another cursor does not take it (it reads for itself).
      const other10 = sink.prime(runId, { seq: 10 })
      assert.deepEqual(await firstThree(20, other10), unprimed[20])
      assert.isTrue(tail.following(runId))
      other10.release()
      await eventually(async () => assert.isFalse(tail.following(runId)))
      // Taken by the follow from its cursor: the same items as without it, its feed the follow's.
      const taken = sink.prime(runId, { seq: 30 })
      assert.deepEqual(await firstThree(30, taken), unprimed[30])
      taken.release()
      await eventually(async () => assert.isFalse(tail.following(runId)))
    } finally {
      await other.close()
    }
  }).timeout(30_000)
})
