import { test } from '@japa/runner'
import { createRuntime } from '../src/runtime.js'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { InvalidStopError, RunFinishedError, RunNotFoundError } from '../src/errors.js'
import { resetTables, createDatabase } from './helpers/db.js'
import { collect, runId, sleep, textOf } from './helpers/sink.js'
import { setupRunner, snapshot, askApproval } from './helpers/parking.js'

const alice = { id: 'alice' }
const bob = { id: 'bob' }
const asAlice = { principal: alice, via: 'api' }

/** A runner that says one word, then talks until its signal aborts (and says how it ended). */
function talker(seen: { aborted?: boolean; returned?: boolean }, obey = true): AgentRunner {
  return {
    async start(ctx: RunContext) {
      await ctx.writer.write({ t: 'text', v: 'Hello' })
      await ctx.writer.flush?.()
      await new Promise<void>((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          seen.aborted = true
          if (obey) resolve()
        })
      })
      seen.returned = true
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
}

async function startTalking(stack: Awaited<ReturnType<typeof setupRunner>>) {
  const id = runId('stop')
  const started = await stack.door.startRun(
    { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
    { message: 'hi' },
    alice
  )
  if (!started || typeof started === 'string') throw new Error('not started')
  // The first word is stored before the stop.
  for (
    let i = 0;
    i < 100 && textOf(await collect(stack.sink.replay(id) as AsyncIterable<any>)) !== 'Hello';
    i++
  )
    await sleep(20)
  return id
}

/** The stored frames of a stream, cursors left out, until its end. */
const storedOf = async (stack: Awaited<ReturnType<typeof setupRunner>>, id: string) =>
  (await collect(stack.sink.replay(id) as AsyncIterable<any>))
    .filter((frame: any) => frame.t !== 'end')
    .map(({ cursor: _cursor, ...frame }) => frame)

test.group('Run control | stop a talking run', () => {
  test('on its replica: the signal aborts, what was said stays, the stream ends cancelled', async ({
    assert,
  }) => {
    const seen: { aborted?: boolean } = {}
    const stack = await setupRunner(talker(seen))
    const id = await startTalking(stack)
    const outcome = await stack.control.stop(id, asAlice)
    assert.deepEqual(outcome, { status: 'cancelled', streamRunId: id })
    assert.isTrue(seen.aborted)
    const frames = await storedOf(stack, id)
    assert.equal(textOf(frames as any), 'Hello')
    assert.deepInclude(frames, { t: 'event', event: { kind: 'cancelled' } })
    const row = await stack.db.from('agent_streams').where('run_id', id).first()
    assert.equal(row.stop_mode, 'keep')
    assert.equal(row.stop_by, 'alice')
    // Idempotent: the same answer again, nothing more written.
    const count = frames.length
    assert.deepEqual(await stack.control.stop(id, asAlice, 'rollback'), {
      status: 'cancelled',
      streamRunId: id,
    })
    assert.lengthOf(await storedOf(stack, id), count)
    const again = await stack.db.from('agent_streams').where('run_id', id).first()
    assert.equal(again.stop_mode, 'keep')
  })

  test('from another replica: heard through the notifier, the agent there stops', async ({
    assert,
  }) => {
    const seen: { aborted?: boolean } = {}
    const stack = await setupRunner(talker(seen))
    // A second runtime on the same database: another replica, which does not run the agent.
    const db = createDatabase()
    const other = createRuntime(db, { runner: talker({}) })
    try {
      const id = await startTalking(stack)
      const outcome = await other.control.stop(id, asAlice)
      assert.equal(outcome.status, 'cancelled')
      assert.isTrue(seen.aborted)
      const frames = await storedOf(stack, id)
      assert.deepInclude(frames, { t: 'event', event: { kind: 'cancelled' } })
    } finally {
      await other.sink.shutdown()
      await db.manager.closeAll()
    }
  })

  test('an agent that ignores its signal: the stream ends cancelled after the grace', async ({
    assert,
  }) => {
    const seen: { aborted?: boolean; returned?: boolean } = {}
    const stack = await setupRunner(talker(seen, false), { stop: { graceMs: 200 } })
    const id = await startTalking(stack)
    const outcome = await stack.control.stop(id, asAlice)
    assert.equal(outcome.status, 'cancelled')
    assert.isTrue(seen.aborted)
    assert.isUndefined(seen.returned)
    const frames = await storedOf(stack, id)
    assert.deepEqual(frames.at(-1), { t: 'event', event: { kind: 'cancelled' } })
  })

  test('refusals change nothing: a bad mode, an unknown run, another person’s run', async ({
    assert,
  }) => {
    const stack = await setupRunner(talker({}))
    const id = await startTalking(stack)
    const before = await snapshot(stack.db)
    await assert.rejects(() => stack.control.stop(id, asAlice, 'later'), InvalidStopError as any)
    await assert.rejects(() => stack.control.stop('nope', asAlice), RunNotFoundError as any)
    await assert.rejects(
      () => stack.control.stop(id, { principal: bob, via: 'api' }),
      RunNotFoundError as any
    )
    await assert.rejects(
      () => stack.control.stop(id, { principal: null, via: 'api' }),
      RunNotFoundError as any
    )
    const after = await snapshot(stack.db)
    // Only the lease renewals move (the run goes on talking).
    const strip = (s: any) =>
      JSON.stringify(s, (k, v) => (k === 'lease_expires_at' || k === 'updated_at' ? 0 : v))
    assert.equal(strip(after), strip(before))
    await stack.control.stop(id, asAlice)
  })

  test('a run that finished on its own: 409, nothing written', async ({ assert }) => {
    const stack = await setupRunner({
      start: async (ctx) => {
        await ctx.writer.write({ t: 'text', v: 'done' })
        return { status: 'finished' }
      },
      resume: async () => ({ status: 'finished' }),
    })
    const id = runId('done')
    await stack.door.startRun(
      { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
      { message: 'hi' },
      alice
    )
    await stack.driver.settled()
    const before = await snapshot(stack.db)
    await assert.rejects(() => stack.control.stop(id, asAlice), RunFinishedError as any)
    assert.deepEqual(await snapshot(stack.db), before)
  })

  test('a parked run: cancelled with its pending approval denied; rollback is recorded', async ({
    assert,
  }) => {
    const stack = await setupRunner({
      start: async (ctx) => {
        return askApproval(ctx)
      },
      resume: async () => ({ status: 'finished' }),
    })
    const id = runId('parked')
    await stack.door.startRun(
      { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
      { message: 'hi' },
      alice
    )
    await stack.driver.settled()
    const outcome = await stack.control.stop(id, asAlice, 'rollback')
    assert.equal(outcome.status, 'cancelled')
    const item = await stack.db.from('agent_approvals').first()
    assert.exists(item)
    const status = await stack.db.from('agent_suspensions').where('run_id', id).first()
    assert.equal(status.status, 'cancelled')
    const row = await stack.db.from('agent_streams').where('run_id', id).first()
    assert.equal(row.stop_mode, 'rollback')
    assert.deepEqual(await stack.control.stop(id, asAlice), {
      status: 'cancelled',
      streamRunId: id,
    })
  })
})

test.group('Run control | a dead replica', () => {
  test('a stop recorded while nobody runs the segment: the takeover ends it cancelled', async ({
    assert,
  }) => {
    const calls: string[] = []
    const runner: AgentRunner = {
      ...talker({}),
      continue: async () => {
        calls.push('continue')
        return { status: 'finished' }
      },
    }
    const db = createDatabase()
    await resetTables(db)
    const stack = createRuntime(db, { runner, leaseMs: 300 })
    try {
      const id = runId('dead')
      // A stream whose writer died mid-segment: opened with a segment record, never renewed.
      const writer = await stack.sink.open(id, { threadId: id, principal: alice }, undefined, {
        meta: { runId: id, threadId: id, parentRunId: null, principal: alice },
        input: null,
      })
      await writer.write({ t: 'text', v: 'partial' })
      await writer.flush()
      writer.release()
      const outcome = await stack.control.stop(id, asAlice, 'keep', { waitMs: 100 })
      assert.equal(outcome.status, 'stopping')
      await sleep(500)
      assert.isTrue(await stack.driver.continueLapsed(id))
      await stack.driver.settled()
      assert.deepEqual(calls, [])
      const frames = (await collect(stack.sink.replay(id) as AsyncIterable<any>))
        .filter((frame: any) => frame.t !== 'end')
        .map(({ cursor: _c, ...f }) => f)
      assert.equal(textOf(frames as any), 'partial')
      assert.deepEqual(frames.at(-1), { t: 'event', event: { kind: 'cancelled' } })
    } finally {
      await stack.sink.shutdown()
      await db.manager.closeAll()
    }
  })
})

test.group('Run control | a dead replica, a runner that cannot continue', () => {
  test('the lapse settles a stopped stream as cancelled, not failed', async ({ assert }) => {
    const db = createDatabase()
    await resetTables(db)
    const stack = createRuntime(db, { runner: talker({}), leaseMs: 300 })
    try {
      const id = runId('dead')
      const writer = await stack.sink.open(id, { threadId: id, principal: alice }, undefined, {
        meta: { runId: id, threadId: id, parentRunId: null, principal: alice },
        input: null,
      })
      await writer.write({ t: 'text', v: 'partial' })
      await writer.flush()
      writer.release()
      assert.equal(
        (await stack.control.stop(id, asAlice, 'keep', { waitMs: 50 })).status,
        'stopping'
      )
      await sleep(500)
      await stack.sink.settleLapsed(id)
      const frames = (await collect(stack.sink.replay(id) as AsyncIterable<any>))
        .filter((frame: any) => frame.t !== 'end')
        .map(({ cursor: _c, ...f }) => f)
      assert.deepEqual(frames.at(-1), { t: 'event', event: { kind: 'cancelled' } })
      const row = await db.from('agent_streams').where('run_id', id).first()
      assert.equal(row.status, 'ended')
    } finally {
      await stack.sink.shutdown()
      await db.manager.closeAll()
    }
  })
})

test.group('Run control | a stop that loses the race to the run’s own end', () => {
  test('recorded, then the stream ends finished unheard: 409 E_RUN_FINISHED, the stop withdrawn', async ({
    assert,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const stack = createRuntime(db, { runner: talker({}) })
    try {
      const id = runId('lost')
      // Its writer runs elsewhere (no driver here hears the stop) and is about to end.
      const writer = await stack.sink.open(id, { threadId: id, principal: alice }, undefined, {
        meta: { runId: id, threadId: id, parentRunId: null, principal: alice },
        input: null,
      })
      await writer.write({ t: 'text', v: 'done' })
      await writer.flush()
      const stopping = stack.control.stop(id, asAlice, 'rollback', { waitMs: 10_000 })
      const recorded = async () =>
        (await db.from('agent_streams').where('run_id', id).first()).stop_mode !== null
      for (let i = 0; i < 250 && !(await recorded()); i++) await sleep(20)
      assert.isTrue(await recorded())
      await writer.end()
      await assert.rejects(() => stopping, RunFinishedError as any)
      const frames = await collect(stack.sink.replay(id) as AsyncIterable<any>)
      assert.notDeepInclude(frames, { t: 'event', event: { kind: 'cancelled' } })
      const row = await db.from('agent_streams').where('run_id', id).first()
      assert.deepEqual([row.stop_mode, row.stop_by], [null, null])
      // Asked again (by the console: the ended stream names no owner now): not `cancelled`.
      await assert.rejects(
        () => stack.control.stop(id, { ...asAlice, admin: true }),
        RunFinishedError as any
      )
    } finally {
      await stack.sink.shutdown()
      await db.manager.closeAll()
    }
  })
})
