import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { setImmediate } from 'node:timers/promises'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { streamGoesOn } from '../src/door/index.js'
import { setupRunner } from './helpers/parking.js'

const alice = { id: 'alice' }
const ROUNDS = 12

/** Parks on one approval per round (`call-1`, `call-2` ...), round after round. */
function parkingRounds(): AgentRunner {
  const ask = async (ctx: RunContext, round: number) => {
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: `call-${round}`,
      toolName: 'send',
      input: { round },
    })
    return { status: 'parked' as const, checkpoint: { round } }
  }
  return {
    start: (ctx) => ask(ctx, 1),
    async resume(ctx) {
      const round = (ctx.checkpoint as { round: number }).round + 1
      await ctx.writer.write({ t: 'text', v: `Round ${round}.` })
      return ask(ctx, round)
    },
  }
}

/**
 * A resume reopens the stream and marks its suspension resumed. A reader that reads the stream
 * row and the suspension apart could see the stream still ended and the suspension already
 * resumed, and take a run that goes on for one that stopped (the AG-UI door then served the
 * decided park again, the useChat door answered "no active turn"). Readers here run back to
 * back while each decided park is resumed, again and again: none may ever see the run stop.
 */
test.group('A resume racing readers', () => {
  test('from the decision on, every read says the run goes on (both doors)', async ({ assert }) => {
    const stack = await setupRunner(parkingRounds())
    // The test resumes each decided park itself, while the readers run.
    const ready: [string, number][] = []
    const tryResume = stack.driver.tryResume.bind(stack.driver)
    stack.driver.tryResume = async (runId, park) => {
      ready.push([runId, park])
      return false
    }
    const runId = randomUUID()
    const threadId = randomUUID()
    await stack.door.startRun({ runId, threadId, ownerId: alice.id }, null, alice)
    await stack.driver.settled()

    const wrong: string[] = []
    let reads = 0
    for (let round = 1; round <= ROUNDS; round++) {
      const end = (await stack.sink.segmentEnd(runId, (await stack.sink.head(runId))!.lastSeq - 1))!
      const [item] = await stack.parking.queries.list({ streamRunId: runId })
      assert.equal(item.itemId, `call-${round}`)
      await stack.parking.decisions.approve(item.runId, item.itemId, { principal: alice })
      let reading = true
      const agui = async () => {
        while (reading) {
          // Each read on its own turn of the event loop, as requests come (SQLite answers
          // synchronously: back to back in one turn, the readers would starve the resume).
          await setImmediate()
          reads++
          if (!(await streamGoesOn({ parking: stack.parking }, runId, end)))
            wrong.push(`AG-UI, round ${round}`)
        }
      }
      const chat = async () => {
        while (reading) {
          await setImmediate()
          reads++
          const reply = await stack.uiMessage.resume(threadId, undefined, alice)
          if (reply.kind !== 'stream') wrong.push(`useChat ${reply.kind}, round ${round}`)
        }
      }
      const readers = [agui(), agui(), agui(), chat(), chat(), chat()]
      const [claimed, park] = ready.at(-1)!
      ready.length = 0
      assert.isTrue(await tryResume(claimed, park))
      await stack.driver.settled()
      reading = false
      await Promise.all(readers)
    }
    assert.deepEqual(wrong, [])
    assert.isAbove(reads, ROUNDS * 4)
    const [last] = await stack.parking.queries.list({ streamRunId: runId })
    assert.equal(last.itemId, `call-${ROUNDS + 1}`)
  })
})
