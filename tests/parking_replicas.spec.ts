import { test } from '@japa/runner'
import { setupParking } from './helpers/parking.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, sleep, textOf } from './helpers/sink.js'

const alice = { id: 'alice' }

/** Run `decide` here and `command` on the replica at the same instant; return both outcomes. */
async function race(
  local: () => Promise<unknown>,
  replica: Replica,
  command: Record<string, unknown>
) {
  const remote = replica.call(command)
  const here = local().then(
    () => 'won',
    (error) => error.code ?? 'error'
  )
  const [a, b] = await Promise.all([here, remote])
  return [
    a,
    b.result === 'cancelled' || b.result === 'approved' || b.result === 'rejected'
      ? 'won'
      : b.result,
  ]
}

test.group('Parking across two processes', () => {
  for (const [name, mine, theirs] of [
    ['approve vs approve', 'approve', 'approve'],
    ['approve vs reject', 'approve', 'reject'],
    ['approve vs cancel', 'approve', 'cancel'],
  ] as const) {
    test(`${name}, 50 times: exactly one wins, the agent resumes at most once`, async ({
      assert,
    }) => {
      const { driver, parking, sink, db } = await setupParking({ steps: ['approval'] })
      const replica = await Replica.start({}, { script: 'parking', agent: { steps: ['approval'] } })
      let cancelledWins = 0
      const wins: Record<string, number> = { approve: 0, reject: 0, cancel: 0 }
      for (let i = 0; i < 50; i++) {
        const id = runId(`race${i}`)
        await (
          await driver.start({ runId: id, principal: alice })
        ).done
        const item = `${id}.call0`
        // Sides alternate, so each decision is tried from each process (IPC delays favour one).
        const [here, there] = i % 2 === 0 ? [mine, theirs] : [theirs, mine]
        const act = (op: string) =>
          op === 'cancel'
            ? parking.decisions.cancel(id, { principal: alice })
            : parking.decisions[op as 'approve' | 'reject'](id, item, { principal: alice })
        const outcomes = await race(() => act(here), replica, {
          op: there,
          runId: id,
          itemId: item,
          principal: alice,
        })
        assert.sameMembers(outcomes, ['won', 'E_DECISION_CONFLICT'], `round ${i}: ${outcomes}`)
        wins[outcomes[0] === 'won' ? here : there]++
        await driver.settled()
        await replica.call({ op: 'settled' })
        const frames = await collect(sink.subscribe(id))
        const text = textOf(frames)
        const settled = frames.filter((f: any) => f.event?.kind === 'approval-settled').length
        const cancelled = frames.filter((f: any) => f.event?.kind === 'cancelled').length
        const done = text.split('All done.').length - 1
        if (cancelled) {
          cancelledWins++
          assert.equal(settled, 0)
          assert.equal(done, 0)
        } else {
          assert.equal(settled, 1)
          assert.equal(done, 1, `round ${i}: resumed ${done} times`)
        }
        const suspension = await db
          .connection()
          .from('agent_suspensions')
          .where('run_id', id)
          .first()
        assert.isAtMost(Number(suspension.attempts), 1)
      }
      if (theirs !== 'cancel') assert.equal(cancelledWins, 0)
      else assert.equal(cancelledWins, wins.cancel)
      // Both decisions won some rounds: the race really ran both ways.
      assert.isAbove(wins[mine], 0)
      if (theirs !== mine) assert.isAbove(wins[theirs], 0)
    }).timeout(120_000)
  }

  test('a grandchild parks; the other process answers it by its own run id and resumes it', async ({
    assert,
  }) => {
    const { driver, sink, resumes } = await setupParking({ steps: ['child'], childDepth: 2 })
    const replica = await Replica.start(
      {},
      { script: 'parking', agent: { steps: ['child'], childDepth: 2 } }
    )
    const id = runId()
    await (
      await driver.start({ runId: id, principal: alice })
    ).done
    const grandchild = `${id}.sub1.sub2`
    const reading = collect(sink.subscribe(id))
    const answer = await replica.call({
      op: 'approve',
      runId: grandchild,
      itemId: `${grandchild}.call`,
      principal: alice,
    })
    assert.equal(answer.result, 'approved')
    const { resumes: remoteResumes } = await replica.call({ op: 'settled' })
    assert.equal(remoteResumes, 1)
    assert.lengthOf(resumes, 0) // resumed on the replica that got the answer
    // This process's reader saw the first segment; a re-read shows everything.
    await reading
    const frames = await collect(sink.subscribe(id))
    const text = textOf(frames)
    assert.include(text, 'Sub-agent 1 here. Sub-agent 2 here.')
    assert.include(text, 'Sent.')
    assert.include(text, 'All done.')
    assert.include(
      frames.map((f: any) => f.event?.kind),
      'approval-settled'
    )
  }).timeout(30_000)
})

test.group('Parking | a replica dies between deciding and resuming', () => {
  for (const [name, op, claimed] of [
    ['after the decision, before the claim', 'approveThenDie', false],
    ['after the claim, before the resume', 'claimThenDie', true],
  ] as const) {
    test(`kill -9 ${name}: another replica resumes the run once`, async ({ assert }) => {
      const { driver, parking, sink, parkingStore, resumes } = await setupParking(
        { steps: ['approval'] },
        { claimLeaseMs: 300 }
      )
      const replica = await Replica.start({ claimLeaseMs: 300 } as any, {
        script: 'parking',
        agent: { steps: ['approval'] },
      })
      const id = runId()
      await (
        await driver.start({ runId: id, principal: alice })
      ).done
      const exited = new Promise((resolve) => replica.child.once('exit', resolve))
      replica.child.send({ id: 1, op, runId: id, itemId: `${id}.call0`, principal: alice })
      await exited
      // Decided (first answer wins, it stands); claimed or not, never half-claimed.
      assert.equal(await parkingStore.reads.suspensionStatus(id, 1), claimed ? 'claimed' : 'parked')
      if (claimed) assert.equal(await parking.sweeper.resumeReady(), 0) // the claim has not lapsed yet
      await sleep(claimed ? 350 : 0)
      assert.equal(await parking.sweeper.resumeReady(), 1)
      await driver.settled()
      assert.equal(await parking.sweeper.resumeReady(), 0)
      const frames = await collect(sink.subscribe(id))
      assert.include(textOf(frames), 'Sent.')
      assert.equal(textOf(frames).split('All done.').length - 1, 1)
      assert.deepEqual(resumes, [id])
    }).timeout(30_000)
  }
})
