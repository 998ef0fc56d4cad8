import { test } from '@japa/runner'
import { ParkingSweeper, type SweeperDeps } from '../src/parking/sweeper.js'
import { ReadyNotices } from '../src/parking/ready.js'

/**
 * A sweeper whose steps are plain functions (what it is given is a record of them): the store's
 * lapsed items fail with `failure`; lapsed segments are `r1`, and every settle is recorded.
 */
function sweeper(failure: Error) {
  const settled: string[] = []
  const errors: unknown[] = []
  const deps = {
    store: {
      reads: { lapsed: async () => Promise.reject(failure) },
      parks: { abandonOrphans: async () => 0 },
      claims: { claimCandidates: async () => [] },
    },
    decisions: {},
    ready: new ReadyNotices(),
    onError: (error: unknown) => errors.push(error),
    lapsed: {
      find: async () => ['r1'],
      settle: async (runId: string) => void settled.push(runId),
      graceMs: 200,
    },
  } as unknown as SweeperDeps
  return { sweeper: new ParkingSweeper(deps), settled, errors }
}

const until = async (ok: () => boolean, ms = 5000) => {
  const end = Date.now() + ms
  while (!ok() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10))
}

test.group('Parking sweeper: one failing step holds back no other', () => {
  test('a step that fails (not an outage) is reported; lapsed segments are still settled', async ({
    assert,
    cleanup,
  }) => {
    const { sweeper: it, settled, errors } = sweeper(new Error('a bug in one step'))
    cleanup(it.start(20))
    await until(() => settled.length > 0)
    assert.include(settled, 'r1')
    assert.isAbove(errors.length, 0)
  })

  test('the database away: nothing lapsed is acted on (this replica could not see renewals)', async ({
    assert,
    cleanup,
  }) => {
    const away = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    const { sweeper: it, settled, errors } = sweeper(away)
    cleanup(it.start(20))
    await until(() => errors.length >= 5)
    assert.isAtLeast(errors.length, 5)
    assert.deepEqual(settled, [])
  })
})
