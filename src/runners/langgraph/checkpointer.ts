import type { Database } from '@adonisjs/lucid/database'
import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint'
import { langGraphTableNames, type LangGraphTableNames } from '../../store/langgraph_schema.js'
import { CheckpointUnreadableError } from './checkpointer_errors.js'
import {
  checkId,
  checkpointConfig,
  fromColumn,
  hasFilter,
  matchesFilter,
  pendingWrite,
  sortWrites,
  toColumn,
  type CheckpointRow,
  type Place,
  type WriteRow,
} from './checkpointer_rows.js'

export { CheckpointUnreadableError } from './checkpointer_errors.js'

/** Options of {@link LucidSaver}: where it stores, and how it serializes. */
export interface LucidSaverOptions {
  /** The Lucid connection to store in (default: the app's default connection). */
  connection?: string
  /** Other names for the saver's tables (default: `agent_langgraph_checkpoints`, `_blobs`, `_writes`). */
  tables?: Partial<LangGraphTableNames>
  /** How values are serialized (default: LangGraph's `JsonPlusSerializer`). */
  serde?: SerializerProtocol
}

/** Refuse a place or checkpoint id longer than its column. */
function checkIds(place: Place, ...checkpointIds: string[]) {
  checkId('thread_id', place.threadId)
  checkId('checkpoint_ns', place.ns)
  for (const id of checkpointIds) checkId('checkpoint_id', id)
}

/** How many checkpoints a filtered `list` reads the metadata of at once. */
const FILTER_PAGE = 200

const MISSING_THREAD =
  'LucidSaver: the config has no "thread_id" in its "configurable" (graph.invoke(input, { configurable: { thread_id } }))'

/**
 * A LangGraph checkpointer on the app's own database, through Lucid: the package's tables
 * (`createLangGraphTables`), on SQLite, PostgreSQL and MySQL/MariaDB alike. Checkpoints are
 * stored like LangGraph's `PostgresSaver` stores them: the checkpoint without its values, one
 * row per channel version (a step that did not change a channel stores nothing for it) and the
 * writes of a step's tasks; every value is the serde's bytes, kept exactly.
 *
 * ```ts
 * const graph = builder.compile({ checkpointer: new LucidSaver(db) })
 * ```
 */
export class LucidSaver extends BaseCheckpointSaver {
  readonly tables: LangGraphTableNames
  readonly #db: Database
  readonly #connection?: string

  constructor(db: Database, options: LucidSaverOptions = {}) {
    super(options.serde)
    this.#db = db
    this.#connection = options.connection
    this.tables = langGraphTableNames(options.tables)
  }

  /** Keep `JSON.stringify` of a config that carries the saver out of the database client. */
  toJSON() {
    return '[LucidSaver]'
  }

  #client(): QueryClientContract {
    return this.#db.connection(this.#connection)
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id
    if (threadId === undefined || threadId === null) return undefined
    const place: Place = { threadId, ns: config.configurable?.checkpoint_ns ?? '' }
    const checkpointId = getCheckpointId(config)
    const query = this.#client()
      .from(this.tables.checkpoints)
      .where('thread_id', place.threadId)
      .where('checkpoint_ns', place.ns)
    if (checkpointId) query.where('checkpoint_id', checkpointId)
    else query.orderBy('checkpoint_id', 'desc')
    const row: CheckpointRow | null = await query.first()
    return row ? this.#tuple(row) : undefined
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}) {
    const { limit, before, filter } = options
    if (limit !== undefined && limit <= 0) return
    const query = this.#client().from(this.tables.checkpoints)
    const { thread_id: threadId, checkpoint_ns: ns } = config.configurable ?? {}
    if (threadId !== undefined && threadId !== null) query.where('thread_id', threadId)
    if (ns !== undefined && ns !== null) query.where('checkpoint_ns', ns)
    const checkpointId = getCheckpointId(config)
    if (checkpointId) query.where('checkpoint_id', checkpointId)
    const beforeId = before ? getCheckpointId(before) : ''
    if (beforeId) query.where('checkpoint_id', '<', beforeId)
    query.orderBy([
      { column: 'checkpoint_id', order: 'desc' },
      { column: 'thread_id', order: 'asc' },
      { column: 'checkpoint_ns', order: 'asc' },
    ])
    if (!hasFilter(filter)) {
      if (limit !== undefined) query.limit(limit)
      for (const row of (await query) as CheckpointRow[]) yield await this.#tuple(row)
      return
    }
    // The metadata filter is applied to the deserialized metadata (exact on every dialect):
    // the rows in scope are read a page at a time, and only the ones that match are loaded.
    let left = limit ?? Number.POSITIVE_INFINITY
    for (let offset = 0; left > 0; offset += FILTER_PAGE) {
      const rows = (await query.clone().offset(offset).limit(FILTER_PAGE)) as CheckpointRow[]
      for (const row of rows) {
        const metadata = await this.#load(row.metadata_type, row.metadata)
        if (!matchesFilter(metadata, filter)) continue
        yield await this.#tuple(row, metadata)
        left -= 1
        if (left <= 0) return
      }
      if (rows.length < FILTER_PAGE) return
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions
  ): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id
    if (threadId === undefined || threadId === null) throw new Error(MISSING_THREAD)
    const place: Place = { threadId, ns: config.configurable?.checkpoint_ns ?? '' }
    const parentId = config.configurable?.checkpoint_id || null
    checkIds(place, checkpoint.id, ...(parentId ? [parentId] : []))
    for (const [channel, version] of Object.entries(newVersions)) {
      checkId('channel', channel)
      checkId('version', version)
    }
    const stored = copyCheckpoint(checkpoint)
    const values: Record<string, unknown> = stored.channel_values
    const withoutValues: Partial<Checkpoint> = { ...stored }
    delete withoutValues.channel_values
    const blobs = await Promise.all(
      Object.entries(newVersions).map(async ([channel, version]) => {
        const [type, bytes] =
          channel in values ? await this.serde.dumpsTyped(values[channel]) : ['empty', null]
        return {
          thread_id: place.threadId,
          checkpoint_ns: place.ns,
          channel,
          version: String(version),
          type,
          blob: bytes ? toColumn(bytes) : null,
        }
      })
    )
    const [type, bytes] = await this.serde.dumpsTyped(withoutValues)
    const [metadataType, metadataBytes] = await this.serde.dumpsTyped(metadata)
    await this.#client().transaction(async (trx) => {
      if (blobs.length > 0) {
        // A channel's value at a version never changes: a version stored already is kept.
        await trx
          .knexQuery()
          .table(this.tables.blobs)
          .insert(blobs)
          .onConflict(['thread_id', 'checkpoint_ns', 'channel', 'version'])
          .ignore()
      }
      await trx
        .knexQuery()
        .table(this.tables.checkpoints)
        .insert({
          thread_id: place.threadId,
          checkpoint_ns: place.ns,
          checkpoint_id: checkpoint.id,
          parent_checkpoint_id: parentId,
          type,
          checkpoint: toColumn(bytes),
          metadata_type: metadataType,
          metadata: toColumn(metadataBytes),
          created_at: Date.now(),
        })
        .onConflict(['thread_id', 'checkpoint_ns', 'checkpoint_id'])
        .merge(['parent_checkpoint_id', 'type', 'checkpoint', 'metadata_type', 'metadata'])
    })
    return checkpointConfig(place, checkpoint.id)
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string
  ): Promise<void> {
    const threadId = config.configurable?.thread_id
    if (threadId === undefined || threadId === null) throw new Error(MISSING_THREAD)
    const checkpointId = config.configurable?.checkpoint_id
    if (!checkpointId) {
      throw new Error('LucidSaver: the config has no "checkpoint_id" in its "configurable"')
    }
    if (writes.length === 0) return
    const ns: string = config.configurable?.checkpoint_ns ?? ''
    checkIds({ threadId, ns }, checkpointId)
    checkId('task_id', taskId)
    for (const [channel] of writes) checkId('channel', channel)
    const rows = await Promise.all(
      writes.map(async ([channel, value], idx) => {
        const [type, bytes] = await this.serde.dumpsTyped(value)
        return {
          thread_id: threadId,
          checkpoint_ns: ns,
          checkpoint_id: checkpointId,
          task_id: taskId,
          idx: WRITES_IDX_MAP[channel] ?? idx,
          channel,
          task_path: taskPath ?? '',
          type,
          blob: toColumn(bytes),
        }
      })
    )
    const insert = this.#client()
      .knexQuery()
      .table(this.tables.writes)
      .insert(rows)
      .onConflict(['thread_id', 'checkpoint_ns', 'checkpoint_id', 'task_id', 'idx'])
    // A task's regular writes are stored once (a retried task keeps the first); its special
    // writes (an error, an interrupt) replace the earlier ones, as LangGraph's savers do.
    if (writes.every(([channel]) => channel in WRITES_IDX_MAP)) {
      await insert.merge(['channel', 'task_path', 'type', 'blob'])
    } else {
      await insert.ignore()
    }
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.#client().transaction(async (trx) => {
      for (const table of [this.tables.writes, this.tables.blobs, this.tables.checkpoints]) {
        await trx.from(table).where('thread_id', threadId).delete()
      }
    })
  }

  /** A stored value as the serde reads it: {@link CheckpointUnreadableError} when it no longer does. */
  async #load(type: string, column: unknown): Promise<any> {
    try {
      return await this.serde.loadsTyped(type, fromColumn(column))
    } catch (error) {
      throw new CheckpointUnreadableError({ cause: error })
    }
  }

  /** A stored checkpoint as LangGraph's tuple: its values, metadata, parent and pending writes. */
  async #tuple(row: CheckpointRow, metadata?: CheckpointMetadata): Promise<CheckpointTuple> {
    const place: Place = { threadId: row.thread_id, ns: row.checkpoint_ns }
    const checkpoint: Checkpoint = await this.#load(row.type, row.checkpoint)
    checkpoint.channel_values = await this.#values(place, checkpoint.channel_versions ?? {})
    if (checkpoint.v < 4 && row.parent_checkpoint_id) {
      await this.#migratePendingSends(checkpoint, place, row.parent_checkpoint_id)
    }
    const writes = await this.#writes(place, row.checkpoint_id)
    const tuple: CheckpointTuple = {
      config: checkpointConfig(place, row.checkpoint_id),
      checkpoint,
      metadata: metadata ?? (await this.#load(row.metadata_type, row.metadata)),
      pendingWrites: await Promise.all(
        writes.map(async (write) => pendingWrite(write, await this.#load(write.type, write.blob)))
      ),
    }
    if (row.parent_checkpoint_id) {
      tuple.parentConfig = checkpointConfig(place, row.parent_checkpoint_id)
    }
    return tuple
  }

  /** The channel values a checkpoint's versions point at (a channel emptied at its version has none). */
  async #values(place: Place, versions: ChannelVersions): Promise<Record<string, unknown>> {
    const wanted = Object.entries(versions)
    if (wanted.length === 0) return {}
    const rows: { channel: string; type: string; blob: unknown }[] = await this.#client()
      .from(this.tables.blobs)
      .select('channel', 'type', 'blob')
      .where('thread_id', place.threadId)
      .where('checkpoint_ns', place.ns)
      .where((query) => {
        for (const [channel, version] of wanted) {
          query.orWhere((pair) => pair.where('channel', channel).where('version', String(version)))
        }
      })
    const values: Record<string, unknown> = {}
    for (const row of rows) {
      if (row.type === 'empty') continue
      values[row.channel] = await this.#load(row.type, row.blob)
    }
    return values
  }

  /** The writes pending against one checkpoint, in `writesSortKey` order. */
  async #writes(place: Place, checkpointId: string, channel?: string): Promise<WriteRow[]> {
    const query = this.#client()
      .from(this.tables.writes)
      .select('task_id', 'idx', 'channel', 'task_path', 'type', 'blob')
      .where('thread_id', place.threadId)
      .where('checkpoint_ns', place.ns)
      .where('checkpoint_id', checkpointId)
    if (channel !== undefined) query.where('channel', channel)
    return sortWrites(await query)
  }

  /**
   * A checkpoint of format 1 to 3 kept its pending sends as its parent's writes to `TASKS`:
   * they become the `TASKS` channel's value, as LangGraph's savers migrate them.
   */
  async #migratePendingSends(checkpoint: Checkpoint, place: Place, parentId: string) {
    const sends = await this.#writes(place, parentId, TASKS)
    const values: Record<string, unknown> = (checkpoint.channel_values ??= {})
    values[TASKS] = await Promise.all(sends.map((write) => this.#load(write.type, write.blob)))
    const versions: ChannelVersions = (checkpoint.channel_versions ??= {})
    versions[TASKS] =
      Object.keys(versions).length > 0
        ? maxChannelVersion(...Object.values(versions))
        : this.getNextVersion(undefined)
  }
}
