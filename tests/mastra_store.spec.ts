import { test } from '@japa/runner'
import { createEmptyWorkflowSnapshot } from '@mastra/core/storage'
import { LucidMastraWorkflows, lucidMastraStore } from '../src/runners/mastra/index.js'
import { createDatabase, resetTables } from './helpers/db.js'

/**
 * `LucidMastraWorkflows`: Mastra's `workflows` storage domain (what a paused agent run resumes
 * from) on the suite's database, with what Mastra's own in-memory store does as the reference.
 */

async function setup(cleanup: (fn: () => Promise<void>) => void) {
  const db = createDatabase()
  cleanup(() => db.manager.closeAll())
  await resetTables(db)
  return { db, store: new LucidMastraWorkflows({ db }) }
}

const snapshot = (runId: string, status: string, extra: Record<string, unknown> = {}) =>
  ({ ...createEmptyWorkflowSnapshot(runId), status, ...extra }) as any

test.group('Mastra store on Lucid', () => {
  test('a snapshot persisted is loaded back as JSON, per workflow and run; a second write replaces it', async ({
    assert,
    cleanup,
  }) => {
    const { store } = await setup(cleanup)
    assert.isNull(await store.loadWorkflowSnapshot({ workflowName: 'w', runId: 'r1' }))
    const first = snapshot('r1', 'suspended', {
      context: { step: { status: 'suspended', text: 'é 🎉' } },
    })
    await store.persistWorkflowSnapshot({
      workflowName: 'w',
      runId: 'r1',
      resourceId: 'alice',
      snapshot: first,
    })
    await store.persistWorkflowSnapshot({
      workflowName: 'other',
      runId: 'r1',
      snapshot: snapshot('r1', 'running'),
    })
    assert.deepEqual(await store.loadWorkflowSnapshot({ workflowName: 'w', runId: 'r1' }), first)
    const second = snapshot('r1', 'success')
    await store.persistWorkflowSnapshot({ workflowName: 'w', runId: 'r1', snapshot: second })
    assert.deepEqual(await store.loadWorkflowSnapshot({ workflowName: 'w', runId: 'r1' }), second)
    const run = await store.getWorkflowRunById({ runId: 'r1', workflowName: 'w' })
    assert.equal(run?.workflowName, 'w')
    assert.equal(run?.resourceId, 'alice', 'a later write without a resource keeps it')
    assert.instanceOf(run?.createdAt, Date)
    assert.deepEqual(run?.snapshot, second)
    await store.deleteWorkflowRunById({ runId: 'r1', workflowName: 'w' })
    assert.isNull(await store.loadWorkflowSnapshot({ workflowName: 'w', runId: 'r1' }))
    assert.isNotNull(await store.loadWorkflowSnapshot({ workflowName: 'other', runId: 'r1' }))
  }).timeout(30_000)

  test('a resume is claimed once: of concurrent updateWorkflowState({ expectedStatus }) exactly one wins', async ({
    assert,
    cleanup,
  }) => {
    const { store } = await setup(cleanup)
    await store.persistWorkflowSnapshot({
      workflowName: 'w',
      runId: 'r',
      snapshot: snapshot('r', 'suspended'),
    })
    const claims = await Promise.all(
      Array.from({ length: 6 }, () =>
        store.updateWorkflowState({
          workflowName: 'w',
          runId: 'r',
          opts: { status: 'running', expectedStatus: 'suspended' } as any,
        })
      )
    )
    assert.lengthOf(claims.filter(Boolean), 1)
    assert.equal(
      (await store.loadWorkflowSnapshot({ workflowName: 'w', runId: 'r' }))?.status,
      'running'
    )
    // A run that has no row: nothing, as in Mastra's in-memory store.
    assert.isUndefined(
      await store.updateWorkflowState({
        workflowName: 'w',
        runId: 'none',
        opts: { status: 'running' } as any,
      })
    )
  }).timeout(30_000)

  test('step results merge into the stored snapshot, none lost to concurrent writers', async ({
    assert,
    cleanup,
  }) => {
    const { store } = await setup(cleanup)
    await store.persistWorkflowSnapshot({
      workflowName: 'w',
      runId: 'r',
      snapshot: snapshot('r', 'running'),
    })
    await Promise.all(
      ['a', 'b', 'c', 'd'].map((stepId) =>
        store.updateWorkflowResults({
          workflowName: 'w',
          runId: 'r',
          stepId,
          result: { status: 'success', output: stepId } as any,
          requestContext: { [stepId]: true },
        })
      )
    )
    const stored: any = await store.loadWorkflowSnapshot({ workflowName: 'w', runId: 'r' })
    assert.sameMembers(Object.keys(stored.context), ['a', 'b', 'c', 'd'])
    assert.deepEqual(stored.requestContext, { a: true, b: true, c: true, d: true })
    assert.deepEqual(
      await store.updateWorkflowResults({
        workflowName: 'w',
        runId: 'none',
        stepId: 'a',
        result: {} as any,
        requestContext: {},
      }),
      {}
    )
  }).timeout(30_000)

  test("concurrent first writes of one run keep one row; lists filter and page as Mastra's store does", async ({
    assert,
    cleanup,
  }) => {
    const { db, store } = await setup(cleanup)
    await Promise.all(
      [1, 2, 3].map((n) =>
        store.persistWorkflowSnapshot({
          workflowName: 'w',
          runId: 'same',
          snapshot: snapshot('same', 'running', { n }),
        })
      )
    )
    assert.lengthOf(await db.from('agent_mastra_snapshots').where('run_id', 'same'), 1)
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms)
    await store.persistWorkflowSnapshot({
      workflowName: 'w',
      runId: 'r1',
      resourceId: 'alice',
      snapshot: snapshot('r1', 'suspended'),
      createdAt: at(1),
    })
    await store.persistWorkflowSnapshot({
      workflowName: 'w',
      runId: 'r2',
      resourceId: 'bob',
      snapshot: snapshot('r2', 'suspended'),
      createdAt: at(2),
    })
    await store.persistWorkflowSnapshot({
      workflowName: 'x',
      runId: 'r3',
      snapshot: snapshot('r3', 'success'),
      createdAt: at(3),
    })
    const ids = async (args: any) =>
      (await store.listWorkflowRuns(args)).runs.map((run) => run.runId)
    assert.deepEqual(await ids({ status: 'suspended' }), ['r2', 'r1'])
    assert.deepEqual(await ids({ workflowName: 'w', resourceId: 'alice' }), ['r1'])
    assert.deepEqual(await ids({ fromDate: at(2), toDate: at(3) }), ['r3', 'r2'])
    const page = await store.listWorkflowRuns({
      workflowName: 'w',
      toDate: at(5),
      perPage: 1,
      page: 1,
    })
    assert.deepEqual([page.total, page.runs.map((run) => run.runId)], [2, ['r1']])
    await store.dangerouslyClearAll()
    assert.deepEqual((await store.listWorkflowRuns()).total, 0)
  }).timeout(30_000)

  test('lucidMastraStore: Mastra finds the workflows domain on Lucid, the others in memory', async ({
    assert,
    cleanup,
  }) => {
    const { db } = await setup(cleanup)
    const storage = lucidMastraStore({ db })
    await storage.init()
    assert.instanceOf(await storage.getStore('workflows'), LucidMastraWorkflows)
    assert.exists(await storage.getStore('memory'))
  }).timeout(30_000)
})
