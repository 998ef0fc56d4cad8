import { test } from '@japa/runner'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { RunFinishedError } from '../src/errors.js'
import { collect, runId, sleep, textOf, waitUntil } from './helpers/sink.js'
import { setupRunner, askApproval, setupReplica } from './helpers/parking.js'

/**
 * Issue 22: a stop racing a decision, the resume it starts, another stop and the run ending on
 * its own leaves exactly one outcome. The stored end and the stop's answer agree: a stop that
 * answered `cancelled` ended the stream `cancelled` (its mode recorded); a stop that lost
 * answered 409 and left no trace (no `cancelled`, no mode), whoever committed first.
 */

const alice = { id: 'alice' }
const asAlice = { principal: alice, via: 'api' }

type Stack = Awaited<ReturnType<typeof setupRunner>>

/** A gate the test opens; opened in cleanup too, so that no agent waits past its test. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { open, opened }
}

/** Says `Hello`, waits for the gate (or its signal), then finishes on its own. */
function finisher(gates: Map<string, ReturnType<typeof gate>>): AgentRunner {
  return {
    async start(ctx: RunContext) {
      await ctx.writer.write({ t: 'text', v: 'Hello' })
      await ctx.writer.flush?.()
      const g = gates.get(ctx.runId)!
      await Promise.race([
        g.opened,
        new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)),
      ])
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
}

async function start(stack: Stack, id: string) {
  const started = await stack.door.startRun(
    { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
    { message: 'hi' },
    alice
  )
  if (!started || typeof started === 'string') throw new Error('not started')
}

/** What the stream says of its end: its cancelled events and the stop mode its row keeps. */
async function endOf(stack: Stack, id: string) {
  const frames = await collect(stack.sink.replay(id) as AsyncIterable<any>)
  const row = await stack.db.from('agent_streams').where('run_id', id).first()
  return {
    cancelled: frames.filter((f: any) => f.t === 'event' && f.event.kind === 'cancelled').length,
    text: textOf(frames),
    status: row.status as string,
    stopMode: (row.stop_mode ?? null) as string | null,
  }
}

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error })
  )

test.group('Run control | races leave one outcome', () => {
  test('the run ends on its own before its replica heard the stop: 409, the stop withdrawn', async ({
    assert,
    cleanup,
  }) => {
    const gates = new Map<string, ReturnType<typeof gate>>()
    cleanup(() => gates.forEach((g) => g.open()))
    // The agent's replica hears stops only through a slow poll; the other one polls fast.
    const stack = await setupRunner(finisher(gates), { notifier: 'poll', pollIntervalMs: 10_000 })
    const other = setupReplica(finisher(gates), { notifier: 'poll', pollIntervalMs: 50 })
    const id = runId('late')
    gates.set(id, gate())
    await start(stack, id)
    await waitUntil(async () => (await endOf(stack, id)).text === 'Hello', 'the first word')
    const stop = settle(other.control.stop(id, asAlice, 'rollback', { waitMs: 5000 }))
    await waitUntil(
      async () => (await endOf(stack, id)).stopMode === 'rollback',
      'the stop recorded'
    )
    gates.get(id)!.open()
    const answer = await stop
    assert.isFalse(answer.ok)
    assert.instanceOf((answer as { error: unknown }).error, RunFinishedError)
    await stack.driver.settled()
    assert.deepEqual(await endOf(stack, id), {
      cancelled: 0,
      text: 'Hello',
      status: 'ended',
      stopMode: null,
    })
  })

  test('answered 202, unheard, then the run parks: the stop stays and the resumed run stops', async ({
    assert,
    cleanup,
  }) => {
    const gates = new Map<string, ReturnType<typeof gate>>()
    cleanup(() => gates.forEach((g) => g.open()))
    // Says a word, waits for the gate, then asks approval and parks; its resume says `paid`.
    const parker: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({ t: 'text', v: 'Hello' })
        await ctx.writer.flush?.()
        await gates.get(ctx.runId)!.opened
        return askApproval(ctx)
      },
      async resume(ctx) {
        await ctx.writer.write({ t: 'text', v: ' paid' })
        return { status: 'finished' }
      },
    }
    // The agent's replica hears stops only through a slow poll.
    const stack = await setupRunner(parker, { notifier: 'poll', pollIntervalMs: 10_000 })
    const other = setupReplica(parker, { notifier: 'poll', pollIntervalMs: 50 })
    const id = runId('parks')
    gates.set(id, gate())
    await start(stack, id)
    await waitUntil(async () => (await endOf(stack, id)).text === 'Hello', 'the first word')
    const answer = await other.control.stop(id, asAlice, 'keep', { waitMs: 100 })
    assert.equal(answer.status, 'stopping')
    gates.get(id)!.open()
    await stack.driver.settled()
    // Parked with the stop still recorded; the person approves: the resumed segment stops.
    assert.equal((await endOf(stack, id)).stopMode, 'keep')
    await stack.parking.decisions.approve(id, 'call_1', asAlice)
    await waitUntil(async () => (await endOf(stack, id)).cancelled === 1, 'the resumed run stopped')
    await stack.driver.settled()
    assert.deepInclude(await endOf(stack, id), { cancelled: 1, stopMode: 'keep', status: 'ended' })
  })

  test('a stop racing the run ending on its own: the answer and the stored end agree', async ({
    assert,
    cleanup,
  }) => {
    const gates = new Map<string, ReturnType<typeof gate>>()
    cleanup(() => gates.forEach((g) => g.open()))
    const stack = await setupRunner(finisher(gates))
    const answers = new Set<string>()
    for (let round = 0; round < 8; round++) {
      const id = runId(`race${round}`)
      gates.set(id, gate())
      await start(stack, id)
      await waitUntil(async () => (await endOf(stack, id)).text === 'Hello', 'the first word')
      const stop = settle(
        (async () => {
          await sleep(round % 4)
          return stack.control.stop(id, asAlice, 'keep')
        })()
      )
      await sleep(3 - (round % 4))
      gates.get(id)!.open()
      const answer = await stop
      await stack.driver.settled()
      const end = await endOf(stack, id)
      if (answer.ok) {
        answers.add('cancelled')
        assert.equal(answer.value.status, 'cancelled')
        assert.deepInclude(end, { cancelled: 1, stopMode: 'keep', status: 'ended' })
      } else {
        answers.add('finished')
        assert.instanceOf(answer.error, RunFinishedError)
        assert.deepInclude(end, { cancelled: 0, stopMode: null, status: 'ended' })
      }
    }
    assert.isAbove(answers.size, 0)
  })

  test('two stops at once: both answer cancelled, one mode kept, one cancelled end', async ({
    assert,
    cleanup,
  }) => {
    const gates = new Map<string, ReturnType<typeof gate>>()
    cleanup(() => gates.forEach((g) => g.open()))
    const stack = await setupRunner(finisher(gates))
    const id = runId('twice')
    gates.set(id, gate())
    await start(stack, id)
    await waitUntil(async () => (await endOf(stack, id)).text === 'Hello', 'the first word')
    const [a, b] = await Promise.all([
      stack.control.stop(id, asAlice, 'keep'),
      stack.control.stop(id, asAlice, 'rollback'),
    ])
    assert.deepEqual([a.status, b.status], ['cancelled', 'cancelled'])
    await stack.driver.settled()
    const end = await endOf(stack, id)
    assert.equal(end.cancelled, 1)
    assert.include(['keep', 'rollback'], String(end.stopMode))
  })

  test('a stop racing a decision and the resume it starts: one outcome', async ({ assert }) => {
    const stack = await setupRunner({
      start: async (ctx) => {
        return askApproval(ctx)
      },
      resume: async (ctx) => {
        await ctx.writer.write({ t: 'text', v: 'paid' })
        return { status: 'finished' }
      },
    })
    for (let round = 0; round < 6; round++) {
      const id = runId(`decide${round}`)
      await start(stack, id)
      await stack.driver.settled()
      const approve = settle(
        (async () => {
          if (round % 2) await sleep(round)
          return stack.parking.decisions.approve(id, 'call_1', asAlice)
        })()
      )
      const stop = settle(
        (async () => {
          if (!(round % 2)) await sleep(round)
          return stack.control.stop(id, asAlice)
        })()
      )
      const [approved, stopped] = [await approve, await stop]
      await stack.driver.settled()
      // A stop answered `stopping` (the decision won, its resume had not begun): the resumed
      // segment honours it as it starts.
      if (stopped.ok && stopped.value.status === 'stopping') {
        await waitUntil(
          async () => (await endOf(stack, id)).cancelled === 1,
          'the resumed run stopped'
        )
        await stack.driver.settled()
      }
      const end = await endOf(stack, id)
      const item = await stack.db.from('agent_approvals').where('run_id', id).first()
      assert.isTrue(approved.ok || stopped.ok, 'one of them won')
      if (!approved.ok) {
        // The stop came first: the parked run was cancelled, its approval denied as cancelled.
        assert.notEqual(item.status, 'approved')
        assert.deepInclude(end, { cancelled: 1, text: '' })
      } else {
        assert.equal(item.status, 'approved')
      }
      if (stopped.ok) {
        assert.include(['cancelled', 'stopping'], stopped.value.status)
        assert.equal(end.cancelled, 1)
        assert.isNotNull(end.stopMode)
      } else {
        // The resumed run finished before the stop reached it.
        assert.instanceOf(stopped.error, RunFinishedError)
        assert.deepInclude(end, { cancelled: 0, text: 'paid', stopMode: null })
      }
    }
  })
})
