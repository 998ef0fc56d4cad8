import { test } from '@japa/runner'
import { GroupCommits } from '../src/store/group_commits.js'
import type { AppendPlan, CommitResult } from '../src/store/append_plan.js'
import type { GroupMember, GroupOutcome } from '../src/store/commit_group.js'

/**
 * Group commit's scheduling (issue 26), on the class alone: its two transactions are functions
 * here that wait until the test lets them finish, so what is in flight at each moment is seen.
 * The SQL of a group is covered on the three databases by tests/group_commit.spec.ts.
 */
const result = (): CommitResult => ({ before: 0, rev: 1, rows: [] })

/** Transactions begun, in order: a group's streams, or one stream's alone (a group of one too). */
function harness(maxInFlight?: number, maxAlone?: number) {
  const groups: { runIds: string[]; finish: () => void }[] = []
  const commits = new GroupCommits(
    (members: GroupMember[]) =>
      new Promise<GroupOutcome[]>((resolve) => {
        groups.push({
          runIds: members.map((member) => member.runId),
          finish: () => resolve(members.map(() => ({ result: result() }))),
        })
      }),
    (runId: string) =>
      new Promise<CommitResult>((resolve) => {
        groups.push({ runIds: [runId], finish: () => resolve(result()) })
      }),
    100,
    maxInFlight,
    maxAlone
  )
  return { commits, groups }
}

const plain: AppendPlan = { frames: [] }
const leading: AppendPlan = { frames: [], leading: true }
const turn = () => new Promise((resolve) => setImmediate(resolve))

test.group('Group commit in flight (tests/group_commit_flight.spec.ts)', () => {
  test('commits asked while a group is in flight go in a second group at once, not after it', async ({
    assert,
  }) => {
    const { commits, groups } = harness()
    const first = [commits.commit('a', plain, []), commits.commit('b', plain, [])]
    await turn()
    assert.deepEqual(
      groups.map((group) => group.runIds),
      [['a', 'b']]
    )
    const second = [commits.commit('c', plain, []), commits.commit('d', plain, [])]
    await turn()
    // Two groups in flight at once (the first not finished).
    assert.deepEqual(
      groups.map((group) => group.runIds),
      [
        ['a', 'b'],
        ['c', 'd'],
      ]
    )
    // A third waits for one of them.
    const third = commits.commit('e', plain, [])
    await turn()
    assert.lengthOf(groups, 2)
    groups[1].finish()
    await Promise.all(second)
    await turn()
    assert.deepEqual(groups[2].runIds, ['e'])
    groups[0].finish()
    groups[2].finish()
    await Promise.all([...first, third])
  })

  test('a stream whose commit is in flight waits for it: its next commit goes in a later group', async ({
    assert,
  }) => {
    const { commits, groups } = harness()
    const first = [commits.commit('a', plain, []), commits.commit('z', plain, [])]
    await turn()
    const again = commits.commit('a', plain, [])
    const other = commits.commit('b', plain, [])
    await turn()
    // 'b' goes in a second group; 'a' again waits for its first commit.
    assert.deepEqual(
      groups.map((group) => group.runIds),
      [['a', 'z'], ['b']]
    )
    groups[0].finish()
    await Promise.all(first)
    await turn()
    assert.deepEqual(groups[2].runIds, ['a'])
    groups[1].finish()
    groups[2].finish()
    await Promise.all([again, other])
  })

  test('a storm of first texts while a group is in flight: a few go alone, the rest join the next group', async ({
    assert,
  }) => {
    const { commits, groups } = harness(1, 2)
    const first = [commits.commit('x', plain, []), commits.commit('y', plain, [])]
    await turn()
    const storm = ['a', 'b', 'c', 'd', 'e'].map((runId) => commits.commit(runId, leading, []))
    await turn()
    // Two alone; the other three wait for the group in flight (one at a time here).
    assert.deepEqual(
      groups.map((group) => group.runIds),
      [['x', 'y'], ['a'], ['b']]
    )
    groups[0].finish()
    await Promise.all(first)
    await turn()
    assert.deepEqual(groups[3].runIds, ['c', 'd', 'e'])
    for (const group of groups) group.finish()
    await Promise.all(storm)
  })
})
