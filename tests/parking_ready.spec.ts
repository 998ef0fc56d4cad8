import { readdirSync, readFileSync } from 'node:fs'
import { test } from '@japa/runner'
import { ReadyNotices, type ReadyNotice } from '../src/parking/ready.js'
import type { AgentRunner } from '../src/runner/contract.js'
import type { StreamFrame } from '../src/core/frames.js'
import { setupParking, setupRunner } from './helpers/parking.js'
import { runId } from './helpers/sink.js'

const alice = { id: 'alice' }

/** Parks two approvals in one segment, then finishes on resume. */
const twoApprovals: AgentRunner = {
  async start(ctx) {
    for (const id of ['a', 'b']) {
      await ctx.writer.write({ t: 'approval', runId: ctx.runId, id, toolName: 'pay', input: {} })
    }
    return { status: 'parked', checkpoint: {} }
  },
  resume: async () => ({ status: 'finished' }),
}

/** A question set under `id` (its request's id is the frame's). */
const question = (parkedRunId: string, id: string): StreamFrame => ({
  t: 'elicitation',
  runId: parkedRunId,
  id,
  request: {
    id,
    source: 'ask',
    questions: [{ id: 'ok', prompt: 'OK?', options: [{ value: 'yes', label: 'Yes' }] }],
  },
})

/**
 * One item id asked as both kinds: park 1 asks approval `x`; its resume (park 2) asks question
 * set `x`, and approval `y` with question set `y` in the same park; the next resume finishes.
 */
const idsOfBothKinds: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({ t: 'approval', runId: ctx.runId, id: 'x', toolName: 'pay', input: {} })
    return { status: 'parked', checkpoint: { park: 1 } }
  },
  async resume(ctx) {
    if ((ctx.checkpoint as { park: number }).park === 2) return { status: 'finished' }
    await ctx.writer.write(question(ctx.runId, 'x'))
    await ctx.writer.write({ t: 'approval', runId: ctx.runId, id: 'y', toolName: 'pay', input: {} })
    await ctx.writer.write(question(ctx.runId, 'y'))
    return { status: 'parked', checkpoint: { park: 2 } }
  },
}

test.group('Parking | ready notices', () => {
  test('listeners are awaited in order; emit tells whether one claimed; off stops one', async ({
    assert,
  }) => {
    const notices = new ReadyNotices()
    const seen: string[] = []
    const off = notices.on(async (n) => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      seen.push(`slow:${n.runId}`)
    })
    notices.on((n) => {
      seen.push(`claim:${n.park}`)
      return true
    })
    assert.isTrue(await notices.emit({ runId: 'r', park: 2 }))
    assert.deepEqual(seen, ['slow:r', 'claim:2'])
    off()
    const none = new ReadyNotices()
    assert.isFalse(await none.emit({ runId: 'r', park: 1 }))
    none.on(() => {
      throw new Error('boom')
    })
    await assert.rejects(() => none.emit({ runId: 'r', park: 1 }), 'boom')
  })

  test('the last decision emits once, after the driver claimed; an earlier one emits nothing', async ({
    assert,
  }) => {
    const { driver, parking, parkingStore } = await setupRunner(twoApprovals)
    const seen: ReadyNotice[] = []
    parking.ready.on((notice) => {
      seen.push(notice)
    })
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    await parking.decisions.approve(id, 'a', { principal: alice })
    assert.deepEqual(seen, [])
    await parking.decisions.approve(id, 'b', { principal: alice })
    assert.deepEqual(seen, [{ runId: id, park: 1 }])
    // The driver listened first: the suspension was claimed before the decision resolved.
    assert.oneOf(await parkingStore.reads.suspensionStatus(id, 1), ['claimed', 'resumed'])
    await driver.settled()
  })

  test('the door reads through parking: queries.findItem, queries.newestInStream, decisions.mayDecide', async ({
    assert,
  }) => {
    const { driver, parking } = await setupParking({ steps: ['approval'] })
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    const item = await parking.queries.findItem(id, `${id}.call0`)
    assert.include(item, { runId: id, park: 1, kind: 'approval', status: 'pending' })
    assert.isNull(await parking.queries.findItem(id, `${id}.call0`, 2))
    assert.deepEqual(await parking.queries.newestInStream(id), {
      runId: id,
      park: 1,
      status: 'parked',
    })
    assert.isNull(await parking.queries.newestInStream(runId()))
    assert.isTrue(await parking.decisions.mayDecide(alice, item!))
    assert.isFalse(await parking.decisions.mayDecide({ id: 'bob' }, item!))
    assert.isFalse(await parking.decisions.mayDecide(null, item!))
  })

  test('one item lookup: an unpinned id is its newest park across both kinds; a tie, the approval', async ({
    assert,
  }) => {
    const { driver, parking } = await setupRunner(idsOfBothKinds)
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    await parking.decisions.approve(id, 'x', { principal: alice })
    await driver.settled()
    // Approval `x` (park 1, approved) is older than question set `x` (park 2, pending): the
    // stored row and the person's view are both the question set.
    const newest = { kind: 'elicitation', park: 2, status: 'pending' }
    assert.include(await parking.queries.findItem(id, 'x'), newest)
    assert.include(await parking.queries.listedItem(id, 'x'), newest)
    // Pinned, each park's own row.
    const first = { kind: 'approval', park: 1, status: 'approved' }
    assert.include(await parking.queries.findItem(id, 'x', 1), first)
    assert.include(await parking.queries.listedItem(id, 'x', 1), first)
    // Both kinds in one park: the approval (ITEM_KINDS order), on both reads.
    const tie = { kind: 'approval', park: 2, itemId: 'y' }
    assert.include(await parking.queries.findItem(id, 'y'), tie)
    assert.include(await parking.queries.listedItem(id, 'y'), tie)
  })

  test('parking never imports the runner', ({ assert }) => {
    const dir = new URL('../src/parking/', import.meta.url)
    for (const file of readdirSync(dir)) {
      const text = readFileSync(new URL(file, dir), 'utf8')
      assert.notMatch(text, /from '\.\.\/runner\//, file)
    }
  })
})
