import type { Database } from '@adonisjs/lucid/database'
import {
  InMemoryStore,
  MastraCompositeStore,
  WorkflowsStorage,
  createEmptyWorkflowSnapshot,
  getSnapshotMemoryInfo,
  matchesExpectedWorkflowStatus,
  mergeWorkflowStepResult,
  normalizePerPage,
  type StorageListWorkflowRunsInput,
  type UpdateWorkflowStateOptions,
  type WorkflowRun,
  type WorkflowRuns,
} from '@mastra/core/storage'
import type { StepResult, WorkflowRunState } from '@mastra/core/workflows'
import { tableNames, type TableNames } from '../../store/schema.js'
import { affectedRows } from '../../store/sql.js'

/** Where {@link LucidMastraWorkflows} keeps Mastra's snapshots. */
export interface LucidMastraStoreOptions {
  /** The app's Lucid database (`@adonisjs/lucid/services/db`). */
  db: Database
  /** The Lucid connection to use (default: the default connection). */
  connection?: string
  /** Renamed tables, as in the package's config (`mastraSnapshots`, default `agent_mastra_snapshots`). */
  tables?: Partial<TableNames>
}

interface SnapshotRow {
  workflow_name: string
  run_id: string
  resource_id: string | null
  snapshot: string
  version: number | string
  created_at: number | string
  updated_at: number | string
}

/** How many times a compare-and-set is tried again when another writer changed the row first. */
const RETRIES = 20

/**
 * Mastra's `workflows` storage domain on the app's Lucid database (SQLite, PostgreSQL, MySQL),
 * in the package's own table (`createMastraSnapshotsTable`): where a Mastra agent keeps the
 * snapshot of a run that waits for a tool call's approval, so `approveToolCall` /
 * `declineToolCall` work on any replica, after any restart. A snapshot is stored as JSON text
 * (as Mastra's own SQL stores do); every change of a stored one is a compare-and-set on its row's
 * `version`, so `updateWorkflowState({ expectedStatus })` (how Mastra claims a resume) lets one
 * caller through when several resume the same run at once.
 */
export class LucidMastraWorkflows extends WorkflowsStorage {
  readonly #db: Database
  readonly #connection?: string
  readonly #table: string

  constructor(options: LucidMastraStoreOptions) {
    super()
    this.#db = options.db
    this.#connection = options.connection
    this.#table = tableNames(options.tables).mastraSnapshots
  }

  #query() {
    return this.#db.connection(this.#connection).from(this.#table)
  }

  #row(workflowName: string, runId: string): Promise<SnapshotRow | null> {
    return this.#query()
      .where({ workflow_name: workflowName, run_id: runId })
      .first() as Promise<SnapshotRow | null>
  }

  supportsConcurrentUpdates(): boolean {
    return true
  }

  async dangerouslyClearAll(): Promise<void> {
    await this.#query().delete()
  }

  /**
   * Change a stored snapshot with `change` (which may mutate it; `undefined` = leave it), as a
   * compare-and-set on the row's version, tried again when another writer came first. Nothing
   * happens for a run that has no row.
   */
  async #change<T>(
    workflowName: string,
    runId: string,
    change: (snapshot: WorkflowRunState) => { snapshot: WorkflowRunState; value: T } | undefined
  ): Promise<T | undefined> {
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const row = await this.#row(workflowName, runId)
      if (!row) return undefined
      const current = (parse(row.snapshot) ??
        createEmptyWorkflowSnapshot(runId)) as WorkflowRunState
      const changed = change(current)
      if (!changed) return undefined
      const updated = await this.#query()
        .where({ workflow_name: workflowName, run_id: runId, version: Number(row.version) })
        .update({
          snapshot: JSON.stringify(changed.snapshot),
          version: Number(row.version) + 1,
          updated_at: Date.now(),
        })
      if (affectedRows(updated) === 1) return changed.value
    }
    throw new Error(`the snapshot of run ${runId} kept changing under its update`)
  }

  async updateWorkflowResults(args: {
    workflowName: string
    runId: string
    stepId: string
    result: StepResult<any, any, any, any>
    requestContext: Record<string, any>
  }): Promise<Record<string, StepResult<any, any, any, any>>> {
    const context = await this.#change(args.workflowName, args.runId, (snapshot) => {
      const merged = mergeWorkflowStepResult({
        snapshot,
        stepId: args.stepId,
        result: args.result,
        requestContext: args.requestContext,
      })
      return { snapshot, value: merged }
    })
    return context ?? {}
  }

  async updateWorkflowState(args: {
    workflowName: string
    runId: string
    opts: UpdateWorkflowStateOptions
  }): Promise<WorkflowRunState | undefined> {
    const { expectedStatus, ...state } = args.opts
    return this.#change(args.workflowName, args.runId, (snapshot) => {
      if (!matchesExpectedWorkflowStatus(snapshot.status, expectedStatus)) return undefined
      const next = { ...snapshot, ...state } as WorkflowRunState
      return { snapshot: next, value: next }
    })
  }

  async persistWorkflowSnapshot(args: {
    workflowName: string
    runId: string
    resourceId?: string
    snapshot: WorkflowRunState
    createdAt?: Date
    updatedAt?: Date
  }): Promise<void> {
    const now = Date.now()
    const text = JSON.stringify(args.snapshot)
    const key = { workflow_name: args.workflowName, run_id: args.runId }
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const row = await this.#row(args.workflowName, args.runId)
      if (row) {
        const updated = await this.#query()
          .where({ ...key, version: Number(row.version) })
          .update({
            snapshot: text,
            version: Number(row.version) + 1,
            ...(args.resourceId === undefined ? {} : { resource_id: args.resourceId }),
            ...(args.createdAt ? { created_at: args.createdAt.getTime() } : {}),
            updated_at: args.updatedAt?.getTime() ?? now,
          })
        if (affectedRows(updated) === 1) return
        continue
      }
      try {
        await this.#db
          .connection(this.#connection)
          .table(this.#table)
          .insert({
            ...key,
            resource_id: args.resourceId ?? null,
            snapshot: text,
            version: 0,
            created_at: args.createdAt?.getTime() ?? now,
            updated_at: args.updatedAt?.getTime() ?? now,
          })
        return
      } catch (error) {
        // Inserted by another writer meanwhile: update that row instead.
        if (!(await this.#row(args.workflowName, args.runId))) throw error
      }
    }
    throw new Error(`the snapshot of run ${args.runId} kept changing under its write`)
  }

  async loadWorkflowSnapshot(args: {
    workflowName: string
    runId: string
  }): Promise<WorkflowRunState | null> {
    const row = await this.#row(args.workflowName, args.runId)
    return row ? (parse(row.snapshot) as WorkflowRunState | null) : null
  }

  async listWorkflowRuns(args: StorageListWorkflowRunsInput = {}): Promise<WorkflowRuns> {
    if (args.page !== undefined && args.page < 0) throw new Error('page must be >= 0')
    const query = this.#query().orderBy('created_at', 'desc').orderBy('run_id', 'asc')
    if (args.workflowName) query.where('workflow_name', args.workflowName)
    if (args.resourceId) query.where('resource_id', args.resourceId)
    if (args.fromDate) query.where('created_at', '>=', args.fromDate.getTime())
    if (args.toDate) query.where('created_at', '<=', args.toDate.getTime())
    let runs = ((await query) as SnapshotRow[]).map(toRun)
    // In the snapshot's JSON: filtered here, as Mastra's in-memory store does.
    if (args.status) {
      runs = runs.filter((run) => (run.snapshot as WorkflowRunState | null)?.status === args.status)
    }
    if (args.threadId) {
      runs = runs.filter(
        (run) => getSnapshotMemoryInfo(run.snapshot as WorkflowRunState)?.threadId === args.threadId
      )
    }
    const total = runs.length
    if (args.perPage !== undefined && args.page !== undefined) {
      const perPage = normalizePerPage(args.perPage, Number.MAX_SAFE_INTEGER)
      runs = runs.slice(args.page * perPage, args.page * perPage + perPage)
    }
    return { runs, total }
  }

  async getWorkflowRunById(args: {
    runId: string
    workflowName?: string
  }): Promise<WorkflowRun | null> {
    const query = this.#query().where('run_id', args.runId).orderBy('created_at', 'desc')
    if (args.workflowName) query.where('workflow_name', args.workflowName)
    const row = (await query.first()) as SnapshotRow | null
    return row ? toRun(row) : null
  }

  async deleteWorkflowRunById(args: { runId: string; workflowName: string }): Promise<void> {
    await this.#query().where({ workflow_name: args.workflowName, run_id: args.runId }).delete()
  }
}

/** A stored snapshot's JSON, or `null` when it is not JSON (a row written by hand). */
function parse(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

function toRun(row: SnapshotRow): WorkflowRun {
  return {
    workflowName: row.workflow_name,
    runId: row.run_id,
    snapshot: (parse(row.snapshot) ?? row.snapshot) as WorkflowRunState | string,
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
    ...(row.resource_id === null ? {} : { resourceId: row.resource_id }),
  }
}

/**
 * A Mastra store whose `workflows` domain (the snapshots a paused agent run is resumed from) is
 * {@link LucidMastraWorkflows} on the app's database, every other domain `options.default`
 * (default: Mastra's `InMemoryStore`; give Mastra's own store for memory, scores and traces
 * that must last). Give it to `new Mastra({ storage })`.
 */
export function lucidMastraStore(
  options: LucidMastraStoreOptions & { default?: MastraCompositeStore; id?: string }
): MastraCompositeStore {
  return new MastraCompositeStore({
    id: options.id ?? 'adonis-agent-stream',
    default: options.default ?? new InMemoryStore(),
    domains: { workflows: new LucidMastraWorkflows(options) },
  })
}
