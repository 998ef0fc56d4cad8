import { test } from '@japa/runner'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { setupRunner } from './helpers/parking.js'
import { runId, sleep } from './helpers/sink.js'

/**
 * Issue 21 item 17: concurrent parks, decisions and claims of many runs at once are normal
 * operation. On MariaDB they deadlocked on agent_suspensions (ER_LOCK_DEADLOCK) and the failure
 * was reported as a background failure. Twenty runs at once, each parking three times on two
 * approvals decided together as soon as they are asked, the sweeper sweeping meanwhile: every
 * run finishes, nothing is reported.
 */
const ROUNDS = 3
const RUNS = 20

/** Asks approval for `a<n>` and `b<n>`, parks; resumed, asks the next two, up to ROUNDS parks. */
const twoAtATime: AgentRunner = {
  async start(ctx) {
    return ask(ctx, 1)
  },
  async resume(ctx) {
    const n = (ctx.checkpoint as { n: number }).n + 1
    return n > ROUNDS ? { status: 'finished' } : ask(ctx, n)
  },
}
async function ask(ctx: RunContext, n: number) {
  for (const id of [`a${n}`, `b${n}`]) {
    await ctx.writer.write({ t: 'approval', runId: ctx.runId, id, toolName: 'pay', input: { n } })
  }
  return { status: 'parked' as const, checkpoint: { n } }
}

test.group('Parking | concurrent parks, decisions and claims', () => {
  test('twenty runs, three parks of two approvals each, decided at once: all finish, nothing reported', async ({
    assert,
  }) => {
    const errors: unknown[] = []
    const stack = await setupRunner(twoAtATime, {
      onError: (error) => errors.push(error),
      approverPolicy: async () => true,
    })
    const stopSweeper = stack.parking.sweeper.start(20)
    const alice = { id: 'alice' }
    const ids = Array.from({ length: RUNS }, () => runId())
    const decided = new Map<string, number>()
    try {
      await Promise.all(
        ids.map(async (id) => {
          await (
            await stack.driver.start({ runId: id, principal: alice })
          ).done
          const deadline = Date.now() + 60_000
          let count = 0
          while (count < 2 * ROUNDS && Date.now() < deadline) {
            const items = await stack.parking.queries.list({ streamRunId: id, status: 'pending' })
            if (items.length < 2) {
              await sleep(5)
              continue
            }
            await Promise.all(
              items.map((item) =>
                stack.parking.decisions
                  .approve(id, item.itemId, { principal: alice })
                  .then(() => count++)
                  .catch((error) => errors.push(error))
              )
            )
          }
          decided.set(id, count)
        })
      )
      await stack.driver.settled()
    } finally {
      stopSweeper()
    }
    assert.deepEqual(errors.map(String), [])
    assert.deepEqual([...new Set(decided.values())], [2 * ROUNDS])
    const suspensions = await stack.db
      .connection()
      .from('agent_suspensions')
      .whereIn('run_id', ids)
      .select('status')
    // Each run parked ROUNDS times and was resumed each time (the last resume finished it).
    assert.lengthOf(suspensions, RUNS * ROUNDS)
    assert.deepEqual([...new Set(suspensions.map((row: any) => row.status))], ['resumed'])
    for (const id of ids) assert.equal((await stack.sink.head(id))!.status, 'ended', id)
  }).timeout(120_000)
})
