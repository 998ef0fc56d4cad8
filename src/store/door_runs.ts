import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { nowMs } from './sql.js'
import { toStreamState, type StreamState } from './rows.js'
import { isMissingTable } from './checkpoint_rows.js'

/**
 * One door run: a segment of a stream that a client started or resumed through a door (AG-UI, or
 * the AI SDK UI message stream door, which share these rows: one thread is readable through both).
 */
export interface DoorRun {
  runId: string
  threadId: string
  streamRunId: string
  /** The run reads its stream after this seq (0: from the start). */
  afterSeq: number
  kind: 'start' | 'resume'
  resumeHash: string | null
  /** Tools the client offered this run (frontend tools), by name. */
  clientTools?: string[]
  /** The user message that started the run (`MESSAGES_SNAPSHOT` needs the client's id for it). */
  inputMessage?: { id: string; content: string } | null
  ownerId: string | null
  createdAt: number
}

const toRun = (row: Record<string, any>): DoorRun => ({
  runId: row.run_id,
  threadId: row.thread_id,
  streamRunId: row.stream_run_id,
  afterSeq: Number(row.after_seq),
  kind: row.kind,
  resumeHash: row.resume_hash,
  clientTools: row.client_tools ? (JSON.parse(row.client_tools) as string[]) : [],
  inputMessage: row.input_message ? JSON.parse(row.input_message) : null,
  ownerId: row.owner_id,
  createdAt: Number(row.created_at),
})

/**
 * Thrown inside a new run's open when its thread's newest run is no longer the one its door
 * judged the thread by (another message's run was recorded first): the open is undone.
 */
export class TurnTakenError extends Error {
  constructor() {
    super('Another run of this thread started first')
  }
}

/**
 * Thrown inside a new run's open when its thread is another owner's (another principal's claim
 * landed first): the open is undone.
 */
export class ThreadTakenError extends Error {
  constructor() {
    super('This thread is claimed by another owner')
  }
}

/** A run's row as stored. */
const runRecord = (run: Omit<DoorRun, 'createdAt'>) => ({
  run_id: run.runId,
  thread_id: run.threadId,
  stream_run_id: run.streamRunId,
  after_seq: run.afterSeq,
  kind: run.kind,
  resume_hash: run.resumeHash,
  client_tools: run.clientTools?.length ? JSON.stringify(run.clientTools) : null,
  input_message: run.inputMessage ? JSON.stringify(run.inputMessage) : null,
  owner_id: run.ownerId,
  created_at: nowMs(),
})

/** The door's table (`agent_agui_runs`), through Lucid. */
export class DoorRunStore {
  /** The threads table is missing (a schema migrated before `createThreadsTable`). */
  #noThreads = false

  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  async find(runId: string): Promise<DoorRun | null> {
    const row = await this.connect().from(this.tables.aguiRuns).where('run_id', runId).first()
    return row ? toRun(row) : null
  }

  /**
   * A run and its stream's row in one read (what a re-attach needs first): `stream` is `null`
   * when the stream does not exist (never opened, or purged). `null` when there is no such run.
   */
  async findWithStream(
    runId: string
  ): Promise<{ run: DoorRun; stream: StreamState | null } | null> {
    const row = await this.#withStream().where(`${this.tables.aguiRuns}.run_id`, runId).first()
    return row ? runWithStream(row) : null
  }

  /**
   * The thread's newest run ({@link latest}) and its stream's row (`null`: none, purged), in
   * one read: what a useChat resume needs before it checks the cursor.
   */
  async latestWithStream(
    threadId: string
  ): Promise<{ run: DoorRun; stream: StreamState | null } | null> {
    const runs = this.tables.aguiRuns
    const row = await this.#withStream()
      .where(`${runs}.thread_id`, threadId)
      .orderBy(`${runs}.created_at`, 'desc')
      .orderBy(`${runs}.after_seq`, 'desc')
      .first()
    return row ? runWithStream(row) : null
  }

  /** Runs joined to their stream's row (its columns prefixed `s_`). */
  #withStream() {
    const runs = this.tables.aguiRuns
    const streams = this.tables.streams
    return this.connect()
      .from(runs)
      .leftJoin(streams, `${streams}.run_id`, `${runs}.stream_run_id`)
      .select(`${runs}.*`)
      .select({
        s_run_id: `${streams}.run_id`,
        s_last_seq: `${streams}.last_seq`,
        s_rev: `${streams}.rev`,
        s_status: `${streams}.status`,
        s_lease_expires_at: `${streams}.lease_expires_at`,
        s_created_at: `${streams}.created_at`,
      })
  }

  /** The thread's newest run (the one a new input continues or is refused by). */
  async latest(threadId: string, client = this.connect()): Promise<DoorRun | null> {
    const row = await client
      .from(this.tables.aguiRuns)
      .where('thread_id', threadId)
      .orderBy('created_at', 'desc')
      .orderBy('after_seq', 'desc')
      .first()
    return row ? toRun(row) : null
  }

  /**
   * Record a new run as its thread's next turn, inside the transaction that opens its stream.
   * The thread is claimed for the run's owner and its row locked in one statement where the
   * dialect can (an upsert that returns the owner of record; MySQL: the upsert, then a locking
   * read): every start of the thread waits for the one before it, and two first
   * messages of one thread at once, on any replicas, make exactly one claim. Another owner's
   * thread: {@link ThreadTakenError}. Then the newest run must still be `after` (the run its door
   * judged the thread idle after; `null`: none), else {@link TurnTakenError}. Either undoes the
   * open. Two messages at once on one thread, on any replicas: one starts, the other is judged
   * again (busy now: refused, queued, or it stops the first). The run and its stream appear
   * together, with the thread's claim.
   */
  async insertTurn(
    trx: TransactionClientContract,
    run: Omit<DoorRun, 'createdAt'>,
    after: string | null
  ): Promise<void> {
    if (!this.#noThreads) {
      const owner = await this.#claimLocked(trx, run.threadId, run.ownerId)
      if (owner !== run.ownerId) throw new ThreadTakenError()
    }
    // Read after the lock (on MySQL the transaction's first plain read: its snapshot is taken
    // now, with the run of whoever held the lock committed).
    const newest = await this.latest(run.threadId, trx)
    if ((newest?.runId ?? null) !== after) throw new TurnTakenError()
    // After the newest in the thread's order whatever this replica's clock says (a clock
    // behind another replica's would put the new turn before the one it follows).
    const record = runRecord(run)
    if (newest && record.created_at <= newest.createdAt) record.created_at = newest.createdAt + 1
    await trx.table(this.tables.aguiRuns).insert(record)
  }

  /**
   * Claim the thread unless claimed, lock its row, and return its owner of record: an upsert
   * that changes nothing, which takes the row's exclusive lock either way (inserted, or found),
   * and returns the row (PostgreSQL, SQLite). MySQL returns nothing from it: a locking read of
   * the owner follows, under the lock already held. (`INSERT IGNORE` would take a shared lock on
   * a row found: two starts waiting on a third's claim would then both hold it, and deadlock
   * asking for the exclusive one.)
   */
  async #claimLocked(trx: TransactionClientContract, threadId: string, ownerId: string | null) {
    const threads = this.tables.threads
    const claim = trx
      .knexQuery()
      .table(threads)
      .insert({ thread_id: threadId, owner_id: ownerId, created_at: nowMs() })
      .onConflict('thread_id')
      .merge({ owner_id: trx.knexRawQuery('??', [`${threads}.owner_id`]) as any })
    if (trx.dialect.name !== 'mysql') {
      const rows = await claim.returning('owner_id')
      const row = rows[0] as { owner_id?: string | null } | undefined
      return row?.owner_id ?? null
    }
    await claim
    const row = await trx
      .from(threads)
      .select('owner_id')
      .where('thread_id', threadId)
      .forUpdate()
      .first()
    return (row?.owner_id ?? null) as string | null
  }

  /**
   * Whether `error` (a start's) says the threads table is missing (a schema migrated before
   * `createThreadsTable`): from then on a thread is owned by its runs' owner, as before (the
   * door checked it), and the start may be tried again. Told once.
   */
  threadsMissing(error: unknown): boolean {
    if (this.#noThreads || !isMissingTable(error)) return false
    // Another table missing (the webhook outbox's, in the same transaction) is no reason to
    // stop claiming threads: only the threads table's own absence is.
    const message = (error as { message?: unknown }).message
    if (typeof message !== 'string' || !message.includes(this.tables.threads)) return false
    this.#noThreads = true
    return true
  }

  /**
   * The thread's newest run and the run of id `runId` (`null` each when there is none), in ONE
   * read: what a door judges a new input by.
   */
  async latestWith(
    threadId: string,
    runId: string
  ): Promise<{ latest: DoorRun | null; used: DoorRun | null }> {
    const runs = this.tables.aguiRuns
    const client = this.connect()
    const newest = client
      .from(runs)
      .select('run_id')
      .where('thread_id', threadId)
      .orderBy('created_at', 'desc')
      .orderBy('after_seq', 'desc')
      .limit(1)
    const rows = await client
      .from(runs)
      .select(`${runs}.*`)
      .select(newest.clone().as('newest_run_id'))
      .where('run_id', runId)
      .orWhere('run_id', newest)
    const found = rows.map((row: Record<string, any>) => ({
      run: toRun(row),
      newest: row.newest_run_id,
    }))
    const used = found.find((item) => item.run.runId === runId)?.run ?? null
    const latest = found.find((item) => item.run.runId === item.newest)?.run ?? null
    return { latest, used }
  }

  /** The thread's run a resume with this hash recorded (`resumeHash`), or `null`. */
  async byResume(threadId: string, resumeHash: string): Promise<DoorRun | null> {
    const row = await this.connect()
      .from(this.tables.aguiRuns)
      .where('thread_id', threadId)
      .where('resume_hash', resumeHash)
      .first()
    return row ? toRun(row) : null
  }

  /**
   * The thread's turns: its runs that started a stream, oldest first, without the turns a stop
   * rolled back (`stop_mode = 'rollback'`: left out of the conversation the agent sees, and of
   * the chat's history; their rows stay stored). The one place that rule lives.
   */
  async streams(threadId: string): Promise<DoorRun[]> {
    const runs = this.tables.aguiRuns
    const streams = this.tables.streams
    const rows = await this.connect()
      .from(runs)
      .leftJoin(streams, `${streams}.run_id`, `${runs}.stream_run_id`)
      .select(`${runs}.*`)
      .where(`${runs}.thread_id`, threadId)
      .where(`${runs}.kind`, 'start')
      .where((query) =>
        query.whereNull(`${streams}.stop_mode`).orWhereNot(`${streams}.stop_mode`, 'rollback')
      )
      .orderBy(`${runs}.created_at`, 'asc')
      .orderBy(`${runs}.run_id`, 'asc')
    return rows.map(toRun)
  }

  /** Record a run. Returns false when the run id is taken (a repeat, or a race lost). */
  async insert(run: Omit<DoorRun, 'createdAt'>): Promise<boolean> {
    try {
      await this.connect().table(this.tables.aguiRuns).insert(runRecord(run))
      return true
    } catch (error) {
      if (await this.find(run.runId)) return false
      throw error
    }
  }

  /** Forget a run that never got going (its stream could not be opened). */
  async remove(runId: string) {
    await this.connect().from(this.tables.aguiRuns).where('run_id', runId).delete()
  }
}

/** A run read with its stream's row (`#withStream`). */
function runWithStream(row: Record<string, any>): { run: DoorRun; stream: StreamState | null } {
  const stream: StreamState | null =
    row.s_run_id === null || row.s_run_id === undefined ? null : toStreamState(row, 's_')
  return { run: toRun(row), stream }
}
