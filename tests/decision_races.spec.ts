import { test } from '@japa/runner'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { RunDriver } from '../src/runner/driver.js'
import { DecisionConflictError } from '../src/errors.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, sleep } from './helpers/sink.js'

const alice = { id: 'alice' }

/** The denials (`tool-output-denied`) the stream holds, as `id:status`. */
async function denials(stack: Awaited<ReturnType<typeof setupRunner>>, id: string) {
  const frames = (await collect(stack.sink.subscribe(id))) as any[]
  return frames
    .filter((f) => f.t === 'event' && f.event.kind === 'tool-output-denied')
    .map((f) => `${f.event.id}:${f.event.status ?? f.event.reason}`)
}

/** Asks approval for `calls`, then parks (or, with `finish`, ends without parking). */
function asking(calls: string[]): AgentRunner {
  return {
    async start(ctx: RunContext) {
      for (const call of calls) {
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: call,
          toolName: 'send',
          input: {},
        })
      }
      return { status: 'parked', checkpoint: {} }
    },
    async resume() {
      return { status: 'finished' }
    },
  }
}

/**
 * Decisions and the steps that end a segment read what they act on, then commit. A decision that
 * commits in between (with its own frames) must not get a second, contradicting frame from them.
 */
test.group('Decision races', () => {
  test('a cancel racing a rejection: each call is denied once, and the cancel still wins', async ({
    assert,
  }) => {
    // The approver policy runs between the cancel's read and its commit: the rejection lands there.
    let rejectFirst: (() => Promise<unknown>) | null = null
    const stack = await setupRunner(asking(['a', 'b']), {
      approverPolicy: async (principal, item) => {
        const reject = rejectFirst
        rejectFirst = null
        if (reject) await reject()
        return principal?.id === item.requester?.id
      },
    })
    const id = runId()
    await (
      await stack.driver.start({ runId: id, principal: alice })
    ).done
    rejectFirst = () =>
      stack.parking.decisions.reject(id, 'a', { principal: alice }, { reason: 'no' })
    assert.deepEqual(await stack.parking.decisions.cancel(id, { principal: alice }), {
      status: 'cancelled',
    })
    assert.isNull(rejectFirst)
    const rows = await stack.db
      .connection()
      .from('agent_approvals')
      .where('run_id', id)
      .orderBy('item_id')
    assert.deepEqual(
      rows.map((row: any) => [row.item_id, row.status]),
      [
        ['a', 'rejected'],
        ['b', 'cancelled'],
      ]
    )
    const denied = await denials(stack, id)
    assert.deepEqual(
      denied.filter((d) => d.startsWith('a:')),
      ['a:rejected']
    )
    assert.deepEqual(
      denied.filter((d) => d.startsWith('b:')),
      ['b:cancelled']
    )
  })

  test('a cancel that keeps losing to decisions gives up with a conflict, changing nothing', async ({
    assert,
  }) => {
    const calls = Array.from({ length: 16 }, (_, i) => `c${i}`)
    const id = runId()
    // Each time the cancel asks the policy, one more call is rejected before it commits.
    let cancelling = false
    let rejecting = false
    const stack = await setupRunner(asking(calls), {
      approverPolicy: async (principal, item) => {
        if (cancelling && !rejecting) {
          rejecting = true
          const pending = await stack.parking.queries.list({ runId: id })
          await stack.parking.decisions.reject(
            id,
            pending[0].itemId,
            { principal: alice },
            { reason: 'no' }
          )
          rejecting = false
        }
        return principal?.id === item.requester?.id
      },
    })
    await (
      await stack.driver.start({ runId: id, principal: alice })
    ).done
    cancelling = true
    await assert.rejects(
      () => stack.parking.decisions.cancel(id, { principal: alice }),
      DecisionConflictError
    )
    cancelling = false
    const rows = await stack.db.connection().from('agent_approvals').where('run_id', id)
    const rejected = rows.filter((row: any) => row.status === 'rejected').length
    assert.isAbove(rows.filter((row: any) => row.status === 'pending').length, 0)
    assert.equal(rejected + rows.filter((row: any) => row.status === 'pending').length, 16)
    assert.equal(await stack.parkingStore.reads.suspensionStatus(id, 1), 'parked')
    // Only the rejections wrote: one denial each, no cancel.
    const denied = await denials(stack, id)
    assert.lengthOf(denied, rejected)
    assert.isTrue(denied.every((d) => d.endsWith(':rejected')))
  })

  test('a segment ending without parking, racing rejections: every call is denied exactly once', async ({
    assert,
  }) => {
    const stack = await setupRunner(asking([]))
    const ids = Array.from({ length: 8 }, (_, i) => `c${i}`)
    let raced = 0
    for (let round = 0; round < 20; round++) {
      const id = runId()
      // A segment still writing has asked approval for eight calls; it ends now without parking
      // (its suspension is abandoned) while the person rejects them one after another.
      const writer = await stack.sink.open(id, { principal: alice })
      for (const call of ids) {
        await writer.write({ t: 'approval', runId: id, id: call, toolName: 'send', input: {} })
      }
      const rejections = Promise.all(
        ids.map((call) =>
          stack.parking.decisions
            .reject(id, call, { principal: alice }, { reason: 'no' })
            .catch((error) => assert.instanceOf(error, DecisionConflictError))
        )
      )
      // The abandon starts a little later each round: the rejections commit before its read,
      // between its read and its writes, and after.
      await sleep(round % 8)
      const calls = await stack.parkingStore.parks.abandon(id)
      await rejections
      const rows = await stack.db.connection().from('agent_approvals').where('run_id', id)
      // A call the person rejected got its denial from the rejection; one the abandon cancelled
      // gets it from the run: each once, never both.
      for (const row of rows) {
        assert.equal(calls.includes(row.item_id), row.status === 'cancelled', `round ${round}`)
      }
      if (rows.some((row: any) => row.status === 'rejected')) raced++
      writer.release()
    }
    assert.isAbove(raced, 0)
  })

  test('a resume whose claim lapsed and was taken over leaves the stream as the other left it', async ({
    assert,
  }) => {
    const stack = await setupRunner(asking(['a']))
    const id = runId()
    await (
      await stack.driver.start({ runId: id, principal: alice })
    ).done
    // The decision is made while no replica resumes it.
    const tryResume = stack.driver.tryResume.bind(stack.driver)
    stack.driver.tryResume = async () => false
    await stack.parking.decisions.approve(id, 'a', { principal: alice })
    // A replica claims it, then stalls past its claim's lease; this one takes over and finishes.
    const stalled = await stack.parkingStore.claims.claim(id, 1, 'stalled-replica', 20)
    assert.isNotNull(stalled)
    await sleep(40)
    assert.isTrue(await tryResume(id, 1))
    await stack.driver.settled()
    const after = await stack.sink.head(id)
    assert.equal(after!.status, 'ended')
    // The stalled replica wakes and resumes with its lapsed claim: nothing happens.
    const late = new RunDriver(stack.sink, stack.parkingStore, asking([]), {
      replicaId: 'stalled-replica',
    })
    assert.isNull(await late.resume(stalled!))
    assert.deepInclude(await stack.sink.head(id), {
      status: 'ended',
      lastSeq: after!.lastSeq,
      rev: after!.rev,
    })
    assert.equal(await stack.parkingStore.reads.suspensionStatus(id, 1), 'resumed')
  })
})
