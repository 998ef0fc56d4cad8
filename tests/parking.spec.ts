import { test } from '@japa/runner'
import {
  DecisionConflictError,
  DecisionForbiddenError,
  DecisionLapsedError,
  DecisionMismatchError,
  InvalidDecisionError,
  ParkedItemNotFoundError,
} from '../src/errors.js'
import { RUN_FAILED_MESSAGE } from '../src/sink/subscriber.js'
import type { RunDriver } from '../src/runner/driver.js'
import { reusedIdRunner, setupParking, setupRunner, snapshot } from './helpers/parking.js'
import { collect, runId, sleep, textOf } from './helpers/sink.js'

const alice = { id: 'alice' }
const bob = { id: 'bob' }
const events = (frames: any[]) => frames.filter((f) => f.t === 'event').map((f) => f.event.kind)

/** Start a run for alice and wait until its first segment ended (parked, mostly). */
async function parked(driver: RunDriver, prefix?: string) {
  const id = runId(prefix)
  await (
    await driver.start({ runId: id, principal: alice })
  ).done
  return id
}

/** Wait until `check` is true (a background resume), at most `ms`. */
async function until(check: () => Promise<boolean> | boolean, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(20)
  }
}

test.group('Parking | park atomically, decide once, resume', () => {
  test('an approval parks the run: frame, parking row and suspension in one commit', async ({
    assert,
  }) => {
    const { driver, db, parking } = await setupParking({ steps: ['read', 'approval'] })
    const id = runId()
    const { done } = await driver.start({ runId: id, threadId: 't1', principal: alice })
    assert.deepEqual(await done, { status: 'parked', checkpoint: { at: 1, path: [] } })
    const approval = await db.connection().from('agent_approvals').where('run_id', id).first()
    assert.equal(approval.status, 'pending')
    assert.equal(approval.thread_id, 't1')
    assert.equal(approval.tool_name, 'send_email')
    const frame = await db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('seq', approval.stream_seq)
      .first()
    assert.equal(frame.kind, 'approval')
    const suspension = await db.connection().from('agent_suspensions').where('run_id', id).first()
    assert.equal(suspension.status, 'parked')
    assert.deepEqual(JSON.parse(suspension.checkpoint), { at: 1, path: [] })
    const [pending] = await parking.queries.list({ threadId: 't1' })
    assert.include(pending, {
      kind: 'approval',
      runId: id,
      itemId: `${id}.call1`,
      approver: 'requester',
      requesterId: 'alice',
    })
    assert.notProperty(pending, 'checkpoint')
    assert.notProperty(pending, 'principal')
  })

  test('if the park fails, neither the frame nor any parking row is stored', async ({ assert }) => {
    const { sink, parkingStore, db } = await setupParking()
    const id = runId()
    const writer = await sink.open(id, { threadId: 't' })
    await writer.write({ t: 'text', v: 'before' })
    const park = parkingStore.parks.park.bind(parkingStore.parks)
    parkingStore.parks.park = async (...args) => {
      await park(...args)
      throw new Error('disk full')
    }
    await writer.flush()
    const before = await snapshot(db)
    await assert.rejects(() =>
      writer.write({ t: 'approval', runId: id, id: 'c1', toolName: 'x', input: {} })
    )
    assert.equal(await snapshot(db), before)
  })

  test('approve: settlement frames, then the run resumes once and finishes', async ({ assert }) => {
    const { driver, parking, sink, resumes } = await setupParking({ steps: ['approval'] })
    const id = await parked(driver)
    await parking.decisions.approve(
      id,
      `${id}.call0`,
      { principal: alice, via: 'chat' },
      { reason: 'ok' }
    )
    await driver.settled()
    const frames = await collect(sink.subscribe(id))
    assert.lengthOf(resumes, 1)
    assert.includeMembers(events(frames), ['approval-settled', 'tool-output'])
    assert.include(textOf(frames), 'Sent.')
    assert.include(textOf(frames), 'All done.')
    const settled = frames.find((f: any) => f.event?.kind === 'approval-settled') as any
    assert.deepInclude(settled.event, { status: 'approved', decidedVia: 'chat', reason: 'ok' })
    assert.equal(settled.event.decidedBy, 'alice')
    await assert.rejects(
      () => parking.decisions.approve(id, `${id}.call0`, { principal: alice }),
      DecisionConflictError
    )
    await sleep(100)
    assert.deepEqual(resumes, [id])
  })

  test('edited arguments replace the input; reject writes tool-output-denied', async ({
    assert,
  }) => {
    const { driver, parking, sink } = await setupParking({ steps: ['approval'] })
    const a = await parked(driver)
    await parking.decisions.approve(
      a,
      `${a}.call0`,
      { principal: alice },
      { input: { to: 'boss@example.com' } }
    )
    await driver.settled()
    const approved = await collect(sink.subscribe(a))
    const output = approved.find((f: any) => f.event?.kind === 'tool-output') as any
    assert.deepEqual(output.event.output.input, { to: 'boss@example.com' })

    const b = await parked(driver)
    await parking.decisions.reject(b, `${b}.call0`, { principal: alice }, { reason: 'not now' })
    await driver.settled()
    const rejected = await collect(sink.subscribe(b))
    assert.includeMembers(events(rejected), ['approval-settled', 'tool-output-denied'])
    assert.include(textOf(rejected), 'Not sent (rejected)')
  })

  test('a question set: answers validated and normalized; defaults fill absent questions', async ({
    assert,
  }) => {
    const { driver, parking, sink, db } = await setupParking({ steps: ['question'] })
    const id = await parked(driver)
    const item = `${id}.call0`
    const before = await snapshot(db)
    await assert.rejects(
      () => parking.decisions.answer(id, item, { principal: alice }, { answers: { nope: ['x'] } }),
      InvalidDecisionError
    )
    await assert.rejects(
      () =>
        parking.decisions.answer(
          id,
          item,
          { principal: alice },
          { answers: { note: ['x'.repeat(5000)] } }
        ),
      InvalidDecisionError
    )
    await assert.rejects(
      () =>
        parking.decisions.answer(id, item, { principal: alice }, { answers: { format: 'pdf' } }),
      InvalidDecisionError
    )
    await assert.rejects(
      () => parking.decisions.approve(id, item, { principal: alice, via: 'chat' }),
      DecisionMismatchError
    )
    // As the AG-UI door's responseSchema says: a value outside the options (no free text), or
    // two values for a single choice, is refused naming the rule, not dropped.
    await assert.rejects(
      () =>
        parking.decisions.answer(id, item, { principal: alice }, { answers: { format: ['gif'] } }),
      /"answers" fails the "option" rule/
    )
    await assert.rejects(
      () =>
        parking.decisions.answer(
          id,
          item,
          { principal: alice },
          { answers: { format: ['csv', 'pdf'] } }
        ),
      /"answers" fails the "single" rule/
    )
    await assert.rejects(
      () => parking.decisions.answer(id, item, { principal: alice }, { answers: {}, extra: 'x' }),
      /fails the "knownField" rule/
    )
    assert.equal(await snapshot(db), before)
    await parking.decisions.answer(
      id,
      item,
      { principal: alice },
      { answers: { note: ['hello'], format: ['csv'] } }
    )
    await driver.settled()
    const frames = await collect(sink.subscribe(id))
    const output = frames.find((f: any) => f.event?.kind === 'tool-output') as any
    // free text kept
    assert.deepEqual(output.event.output, {
      answers: { format: ['csv'], note: ['hello'] },
      skipped: false,
    })
    assert.include(textOf(frames), 'Format: csv.')

    // Skipped: no answers, and the agent proceeds on assumptions.
    const skip = await parked(driver)
    await parking.decisions.answer(
      skip,
      `${skip}.call0`,
      { principal: alice },
      { skipped: true, answers: { format: ['csv'] } }
    )
    await driver.settled()
    const skipped = await collect(sink.subscribe(skip))
    const skippedOutput = skipped.find((f: any) => f.event?.kind === 'tool-output') as any
    assert.deepEqual(skippedOutput.event.output, { answers: {}, skipped: true })
    assert.include(textOf(skipped), 'Skipped: using defaults.')
  })

  test('answers to an approval are a mismatch; approve from the admin inbox confirms defaults', async ({
    assert,
  }) => {
    const { driver, parking, sink } = await setupParking({ steps: ['approval'] })
    const a = await parked(driver)
    await assert.rejects(
      () => parking.decisions.answer(a, `${a}.call0`, { principal: alice }, { answers: {} }),
      DecisionMismatchError
    )

    const q = await setupParking({ steps: ['question'] }, {}, false)
    const b = await parked(q.driver)
    await q.parking.decisions.approve(b, `${b}.call0`, { principal: alice, via: 'admin' })
    await q.driver.settled()
    const frames = await collect(q.sink.subscribe(b))
    assert.include(textOf(frames), 'Format: pdf.')
    void sink
  })

  test('who may decide: the requester, or the role; a stranger gets 404 like a missing item, whoever may see it 403; nothing changes', async ({
    assert,
  }) => {
    const { driver, parking, db } = await setupParking({ steps: ['approval'] })
    const mine = await parked(driver)
    const before = await snapshot(db)
    // Someone who may neither see nor decide alice's item: the same error as a missing one.
    await assert.rejects(
      () => parking.decisions.approve(mine, `${mine}.call0`, { principal: bob }),
      ParkedItemNotFoundError
    )
    await assert.rejects(
      () => parking.decisions.reject(mine, `${mine}.call0`, { principal: bob }),
      ParkedItemNotFoundError
    )
    await assert.rejects(
      () => parking.decisions.approve(mine, `${mine}.call0`, { principal: null }),
      ParkedItemNotFoundError
    )
    await assert.rejects(
      () => parking.decisions.cancel(mine, { principal: bob }),
      ParkedItemNotFoundError
    )
    await assert.rejects(
      () => parking.decisions.approve(mine, 'no-such-item', { principal: alice }),
      ParkedItemNotFoundError
    )
    // An admin sees every item: the policy's refusal is 403 for them.
    await assert.rejects(
      () => parking.decisions.approve(mine, `${mine}.call0`, { principal: bob, admin: true }),
      DecisionForbiddenError
    )
    await assert.rejects(
      () => parking.decisions.cancel(mine, { principal: bob, admin: true }),
      DecisionForbiddenError
    )
    assert.equal(await snapshot(db), before)

    const roles = await setupParking({ steps: ['approval'], approver: 'finance' }, {}, false)
    const theirs = await parked(roles.driver)
    // Alice's own run: she sees the item, the policy refuses her (no finance role): 403.
    await assert.rejects(
      () => roles.parking.decisions.approve(theirs, `${theirs}.call0`, { principal: alice }),
      DecisionForbiddenError
    )
    await assert.rejects(
      () => roles.parking.decisions.approve(theirs, `${theirs}.call0`, { principal: bob }),
      ParkedItemNotFoundError
    )
    await roles.parking.decisions.approve(theirs, `${theirs}.call0`, {
      principal: { id: 'carol', roles: ['finance'] },
    })
    // Nothing parked any more: a conflict for its owner, a 404 for a stranger.
    await roles.driver.settled()
    await assert.rejects(
      () => roles.parking.decisions.cancel(theirs, { principal: alice }),
      DecisionConflictError
    )
    await assert.rejects(
      () => roles.parking.decisions.cancel(theirs, { principal: bob }),
      ParkedItemNotFoundError
    )
  })

  test('after expiresAt: refused as lapsed; the sweeper settles it expired and the run resumes', async ({
    assert,
  }) => {
    const { driver, parking, sink, resumes } = await setupParking({
      steps: ['approval'],
      expiresInMs: 150,
    })
    const id = await parked(driver)
    await sleep(250)
    await assert.rejects(
      () => parking.decisions.approve(id, `${id}.call0`, { principal: alice }),
      DecisionLapsedError
    )
    assert.equal(await parking.sweeper.expireLapsed(), 1)
    await driver.settled()
    const frames = await collect(sink.subscribe(id))
    const settled = frames.find((f: any) => f.event?.kind === 'approval-settled') as any
    assert.equal(settled.event.status, 'expired')
    assert.include(events(frames), 'tool-output-denied')
    assert.include(textOf(frames), 'Not sent (expired)')
    await until(() => resumes.length === 1)
  })

  test('cancel a parked run: a cancelled event, no resume; cancel after a decision conflicts', async ({
    assert,
  }) => {
    const { driver, parking, sink, resumes } = await setupParking({ steps: ['approval'] })
    const id = await parked(driver)
    await parking.decisions.cancel(id, { principal: alice })
    const frames = await collect(sink.subscribe(id))
    assert.equal(events(frames).at(-1), 'cancelled')
    await assert.rejects(
      () => parking.decisions.approve(id, `${id}.call0`, { principal: alice }),
      DecisionConflictError
    )
    const other = await parked(driver)
    await parking.decisions.approve(other, `${other}.call0`, { principal: alice })
    await assert.rejects(
      () => parking.decisions.cancel(other, { principal: alice }),
      DecisionConflictError
    )
    await until(() => resumes.length === 1)
    assert.deepEqual(resumes, [other])
  })

  test('a child parks two levels down: answered by its own run id; the stream shows it all', async ({
    assert,
  }) => {
    const { driver, parking, sink, db, resumes } = await setupParking({
      steps: ['child'],
      childDepth: 2,
    })
    const id = await parked(driver)
    const grandchild = `${id}.sub1.sub2`
    const row = await db.connection().from('agent_approvals').first()
    assert.equal(row.run_id, grandchild)
    assert.equal(row.stream_run_id, id)
    const suspension = await db
      .connection()
      .from('agent_suspensions')
      .where('run_id', grandchild)
      .first()
    assert.equal(suspension.parent_run_id, `${id}.sub1`)
    const [pending] = await parking.queries.list({ streamRunId: id })
    assert.include(pending, { runId: grandchild, streamRunId: id })
    await parking.decisions.approve(grandchild, `${grandchild}.call`, { principal: alice })
    await driver.settled()
    const frames = await collect(sink.subscribe(id))
    const text = textOf(frames)
    assert.include(text, 'Sub-agent 1 here. Sub-agent 2 here.')
    assert.include(text, 'Sent.')
    assert.include(text, `Back from ${grandchild}. Back from ${id}.sub1.`)
    assert.include(text, 'All done.')
    await until(() => resumes.length === 1)
    assert.deepEqual(resumes, [grandchild])
  })

  test('a thrown error never reaches a reader: a stable code and a fixed sentence', async ({
    assert,
  }) => {
    const { driver, sink } = await setupParking({ failAt: 'start' })
    const id = runId()
    assert.deepEqual(await (await driver.start({ runId: id })).done, { status: 'failed' })
    const frames = await collect(sink.subscribe(id))
    assert.deepInclude(frames.at(-1) as any, {
      t: 'error',
      code: 'run_failed',
      message: RUN_FAILED_MESSAGE,
    })
    assert.notInclude(JSON.stringify(frames), 'secret')
  })

  test('cancelling a running run: its signal aborts and the stream ends with a cancelled event', async ({
    assert,
  }) => {
    const runner = {
      async start(ctx: any) {
        await ctx.writer.write({ t: 'text', v: 'working' })
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
        return { status: 'finished' as const }
      },
      resume: async () => ({ status: 'finished' as const }),
    }
    const stack = await setupRunner(runner)
    const id = runId()
    const { done } = await stack.driver.start({ runId: id })
    await sleep(50)
    assert.isTrue(stack.driver.abort(id))
    assert.deepEqual(await done, { status: 'cancelled' })
    const frames = await collect(stack.sink.subscribe(id))
    assert.deepEqual(events(frames), ['cancelled'])
  })

  test('a checkpoint that is not JSON fails the run instead of parking it for good', async ({
    assert,
  }) => {
    const circular: any = {}
    circular.self = circular
    const runner = {
      async start(ctx: any) {
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: 'c1',
          toolName: 'x',
          input: {},
        })
        return { status: 'parked' as const, checkpoint: circular }
      },
      resume: async () => ({ status: 'finished' as const }),
    }
    const stack = await setupRunner(runner)
    const id = runId()
    assert.deepEqual(await (await stack.driver.start({ runId: id })).done, { status: 'failed' })
    const frames = await collect(stack.sink.subscribe(id))
    assert.deepInclude(frames.at(-1) as any, { t: 'error', code: 'run_failed' })
    const suspension = await stack.db
      .connection()
      .from('agent_suspensions')
      .where('run_id', id)
      .first()
    assert.equal(suspension.status, 'abandoned')
  })

  test('a failed resume ends the segment with an error frame, not a stuck run', async ({
    assert,
  }) => {
    const { driver, parking, sink } = await setupParking({ steps: ['approval'], failAt: 'resume' })
    const id = await parked(driver)
    await parking.decisions.approve(id, `${id}.call0`, { principal: alice })
    await driver.settled()
    const frames = await collect(sink.subscribe(id))
    assert.deepInclude(frames.at(-1) as any, { t: 'error', code: 'run_failed' })
    assert.notInclude(JSON.stringify(frames), 'secret')
  })

  test('a decision that lands while no replica resumes: the suspension stays claimable, the sweeper resumes', async ({
    assert,
  }) => {
    const { driver, parking, sink, parkingStore, resumes } = await setupParking({
      steps: ['approval'],
    })
    const id = await parked(driver)
    // The deciding replica dies between settling and claiming.
    const tryResume = driver.tryResume.bind(driver)
    driver.tryResume = async () => {
      throw new Error('process died')
    }
    await parking.decisions.approve(id, `${id}.call0`, { principal: alice })
    driver.tryResume = tryResume
    assert.equal(await parkingStore.reads.suspensionStatus(id, 1), 'parked')
    // A replica claimed and died before starting: after its claim lapses, it is claimable again.
    assert.isNotNull(await parkingStore.claims.claim(id, 1, 'dead-replica', 50))
    assert.equal(await parkingStore.reads.suspensionStatus(id, 1), 'claimed')
    assert.equal(await parking.sweeper.resumeReady(), 0)
    await sleep(80)
    assert.equal(await parking.sweeper.resumeReady(), 1)
    await driver.settled()
    const frames = await collect(sink.subscribe(id))
    assert.include(textOf(frames), 'Sent.')
    assert.deepEqual(resumes, [id])
  })
})

test.group('Parking | rows and listing', () => {
  test('a tool-call id reused across iterations gets a new parking row each time', async ({
    assert,
  }) => {
    const { driver, parking, db } = await setupRunner(reusedIdRunner(2))
    const id = await parked(driver)
    await parking.decisions.approve(id, 'call_1', { principal: alice })
    await driver.settled()
    // Two parks used the id now: a decision names its park.
    await assert.rejects(
      () => parking.decisions.approve(id, 'call_1', { principal: alice }),
      DecisionConflictError
    )
    await parking.decisions.approve(id, 'call_1', { principal: alice }, { park: 2 })
    await driver.settled()
    const rows = await db.connection().from('agent_approvals').where('run_id', id).orderBy('park')
    assert.deepEqual(
      rows.map((r: any) => [Number(r.park), r.status, JSON.parse(r.input).n]),
      [
        [1, 'approved', 1],
        [2, 'approved', 2],
      ]
    )
  })

  test('list: by thread, by run, all, newest first, paged; decided items in the history', async ({
    assert,
  }) => {
    const { driver, parking } = await setupParking({ steps: ['approval'] })
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const id = runId(`list${i}`)
      ids.push(id)
      await (
        await driver.start({ runId: id, threadId: i < 3 ? 'A' : 'B', principal: alice })
      ).done
      await sleep(2)
    }
    assert.lengthOf(await parking.queries.list(), 5)
    assert.deepEqual(
      (await parking.queries.list({ threadId: 'B' })).map((i) => i.runId),
      [ids[4], ids[3]]
    )
    assert.deepEqual(
      (await parking.queries.list({ runId: ids[1] })).map((i) => i.runId),
      [ids[1]]
    )
    const page1 = await parking.queries.list({ perPage: 2, page: 1 })
    const page2 = await parking.queries.list({ perPage: 2, page: 2 })
    assert.deepEqual(
      [...page1, ...page2].map((i) => i.runId),
      [ids[4], ids[3], ids[2], ids[1]]
    )
    await parking.decisions.reject(
      ids[0],
      `${ids[0]}.call0`,
      { principal: alice, via: 'admin' },
      { reason: 'no' }
    )
    await driver.settled()
    const [decided] = await parking.queries.list({ status: 'decided' })
    assert.include(decided, {
      runId: ids[0],
      status: 'rejected',
      decidedBy: 'alice',
      decidedVia: 'admin',
      reason: 'no',
    })
    assert.lengthOf(await parking.queries.list(), 4)
  })

  test('an oversized or malformed decision changes no row', async ({ assert }) => {
    const { driver, parking, db } = await setupParking({ steps: ['approval'] })
    const id = await parked(driver)
    const before = await snapshot(db)
    const item = `${id}.call0`
    await assert.rejects(
      () =>
        parking.decisions.approve(
          id,
          item,
          { principal: alice },
          { input: { blob: 'x'.repeat(70_000) } }
        ),
      InvalidDecisionError
    )
    await assert.rejects(
      () => parking.decisions.approve(id, item, { principal: alice }, { reason: 'x'.repeat(3000) }),
      InvalidDecisionError
    )
    await assert.rejects(
      () => parking.decisions.reject(id, item, { principal: alice }, { reason: 42 }),
      InvalidDecisionError
    )
    await assert.rejects(
      () => parking.decisions.reject(id, item, { principal: alice }, { input: {} }),
      DecisionMismatchError
    )
    assert.equal(await snapshot(db), before)
  })
})

test.group('Parking | edges', () => {
  test('a decision that lands before the runner returns parked still resumes the run', async ({
    assert,
  }) => {
    let decided!: () => void
    const decision = new Promise<void>((resolve) => (decided = resolve))
    let resumed = 0
    const runner = {
      async start(ctx: any) {
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: 'c1',
          toolName: 'x',
          input: {},
        })
        await decision // a person answers before this segment returns
        return { status: 'parked' as const, checkpoint: { at: 1 } }
      },
      async resume(ctx: any) {
        resumed++
        assert.deepEqual(ctx.input, { ask: 'report' })
        await ctx.writer.write({ t: 'text', v: 'resumed' })
        return { status: 'finished' as const }
      },
    }
    const stack = await setupRunner(runner)
    const id = runId()
    const { done } = await stack.driver.start({
      runId: id,
      principal: alice,
      input: { ask: 'report' },
    })
    await until(async () => (await stack.parking.queries.list({ runId: id })).length === 1)
    await stack.parking.decisions.approve(id, 'c1', { principal: alice })
    assert.equal(await stack.parkingStore.reads.suspensionStatus(id, 1), 'open') // not claimable yet
    decided()
    await done
    await stack.driver.settled()
    assert.equal(resumed, 1)
    assert.include(textOf(await collect(stack.sink.subscribe(id))), 'resumed')
  })

  test('purge keeps the stream of a parked run; a late answer after expiry is 410', async ({
    assert,
  }) => {
    const { driver, parking, sink, db } = await setupParking({
      steps: ['approval'],
      expiresInMs: 100,
    })
    const id = await parked(driver)
    await db.connection().from('agent_streams').where('run_id', id).update({ ended_at: 1 })
    assert.equal(await sink.purge({ olderThanMs: 0 }), 0)
    assert.isTrue(await sink.has(id))
    await sleep(150)
    assert.equal(await parking.sweeper.expireLapsed(), 1)
    await assert.rejects(
      () => parking.decisions.approve(id, `${id}.call0`, { principal: alice }),
      DecisionLapsedError
    )
  })

  test('a decision naming an earlier park of a reused id is a conflict, not a decision on the new one', async ({
    assert,
  }) => {
    const stack = await setupRunner(reusedIdRunner(3))
    const id = await parked(stack.driver)
    const [first] = await stack.parking.queries.list({ runId: id })
    assert.equal(first.park, 1)
    await stack.parking.decisions.approve(id, 'call_1', { principal: alice }, { park: 1 })
    await stack.driver.settled()
    // A duplicate of that first approval arrives late: park 2 is untouched.
    await assert.rejects(
      () => stack.parking.decisions.approve(id, 'call_1', { principal: alice }, { park: 1 }),
      DecisionConflictError
    )
    const [second] = await stack.parking.queries.list({ runId: id })
    assert.include(second, { park: 2, status: 'pending' })
  })

  test('cancel by the stream run id when a child parked; every pending call gets its denial', async ({
    assert,
  }) => {
    const { driver, parking, sink, resumes } = await setupParking({ steps: ['child'] })
    const id = await parked(driver)
    await parking.decisions.cancel(id, { principal: alice })
    const frames = await collect(sink.subscribe(id))
    const denied = frames.filter((f: any) => f.event?.kind === 'tool-output-denied') as any[]
    assert.deepEqual(
      denied.map((f) => f.event.id),
      [`${id}.sub1.call`]
    )
    assert.equal(events(frames).at(-1), 'cancelled')
    assert.lengthOf(resumes, 0)
  })

  test('a segment that died before parking: the sweeper abandons its suspension', async ({
    assert,
  }) => {
    const { sink, parkingStore, parking, db } = await setupParking(
      {},
      { leaseMs: 200, pollIntervalMs: 50 }
    )
    const id = runId()
    const writer = await sink.open(id, { principal: alice })
    await writer.write({ t: 'approval', runId: id, id: 'c1', toolName: 'x', input: {} })
    writer.release() // the process died mid-segment: no outcome, no end()
    const reading = collect(sink.subscribe(id)) // a reader's replica fails the stream on lease lapse
    assert.deepInclude((await reading).at(-1) as any, { t: 'error', code: 'run_failed' })
    assert.equal(await parkingStore.parks.abandonOrphans(), 1)
    assert.equal(await parkingStore.reads.suspensionStatus(id, 1), 'abandoned')
    const row = await db.connection().from('agent_approvals').where('run_id', id).first()
    assert.equal(row.status, 'cancelled')
    assert.lengthOf(await parking.queries.list({ runId: id }), 0)
  })
})
