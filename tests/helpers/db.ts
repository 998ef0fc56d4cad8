import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { AppFactory } from '@adonisjs/core/factories/app'
import { EmitterFactory } from '@adonisjs/core/factories/events'
import { LoggerFactory } from '@adonisjs/core/factories/logger'
import { Database } from '@adonisjs/lucid/database'
import { defineConfig } from '@adonisjs/lucid'
import type { ConnectionConfig, DbQueryEventNode } from '@adonisjs/lucid/types/database'
import {
  createCheckpointsTable,
  dropCheckpointsTable,
  createParkingTables,
  addQueueIndexes,
  addWriterColumns,
  createStreamTables,
  dropParkingTables,
  dropStreamTables,
  tableNames,
  type TableNames,
} from '../../src/store/schema.js'
import {
  createDoorTables,
  addThreadListIndex,
  dropDoorTables,
  createThreadsTable,
  createRunQueueTable,
  dropRunQueueTable,
  dropThreadsTable,
} from '../../src/store/door_schema.js'
import { addStopColumns } from '../../src/store/stop_schema.js'
import { addTraceColumns } from '../../src/store/trace_schema.js'
import {
  createLangGraphTables,
  dropLangGraphTables,
  type LangGraphTableNames,
} from '../../src/store/langgraph_schema.js'
import {
  createMastraSnapshotsTable,
  dropMastraSnapshotsTable,
} from '../../src/store/mastra_schema.js'
import {
  createDurableStreamTables,
  dropDurableStreamTables,
} from '../../src/store/durable_schema.js'
import {
  createDsSubscriptionTables,
  dropDsSubscriptionTables,
} from '../../src/store/ds_subscriptions_schema.js'
import { createWebhookTables, dropWebhookTables } from '../../src/store/webhook_schema.js'
import { createPurgeRunsTable, dropPurgeRunsTable } from '../../src/store/purge_runs_schema.js'

/** Which database the suite runs against: `sqlite` (default), `pg` or `mysql`. */
export const DIALECT = (process.env.DB ?? 'sqlite') as 'sqlite' | 'pg' | 'mysql'

const TMP = new URL('../tmp/', import.meta.url)

/** The Lucid connection config of the suite's database (the same in every process of a test). */
export function connectionConfig(
  dialect = (process.env.DB ?? 'sqlite') as typeof DIALECT
): ConnectionConfig {
  switch (dialect) {
    case 'pg':
      return {
        client: 'pg',
        connection: {
          host: process.env.PG_HOST ?? '127.0.0.1',
          port: Number(process.env.PG_PORT ?? 5432),
          user: process.env.PG_USER ?? 'postgres',
          password: process.env.PG_PASSWORD ?? '',
          database: process.env.PG_DATABASE ?? 'test',
        },
        pool: { min: 0, max: 10 },
      }
    case 'mysql':
      return {
        client: 'mysql2',
        connection: {
          host: process.env.MYSQL_HOST ?? '127.0.0.1',
          port: Number(process.env.MYSQL_PORT ?? 3306),
          user: process.env.MYSQL_USER ?? 'root',
          password: process.env.MYSQL_PASSWORD ?? '',
          database: process.env.MYSQL_DATABASE ?? 'test',
          charset: 'utf8mb4',
        },
        pool: { min: 0, max: 10 },
      }
    default: {
      mkdirSync(TMP, { recursive: true })
      return {
        client: 'better-sqlite3',
        connection: {
          filename: process.env.SQLITE_FILE ?? fileURLToPath(new URL('suite.sqlite3', TMP)),
        },
        useNullAsDefault: true,
        pool: {
          min: 1,
          max: 1,
          // WAL lets a second process read while this one writes; busy_timeout makes writers
          // from two processes wait for each other instead of failing.
          afterCreate: (conn: any, done: (error: Error | null, conn: any) => void) => {
            conn.pragma('journal_mode = WAL')
            conn.pragma('synchronous = NORMAL')
            conn.pragma('busy_timeout = 10000')
            done(null, conn)
          },
        },
      }
    }
  }
}

/**
 * A standalone Lucid `Database` on the suite's database (or on `connection`, a private server's),
 * like the official packages' tests. `onQuery` is told of every statement (Lucid's `db:query`
 * event; the connection must have `debug: true`).
 */
export function createDatabase(
  connection: ConnectionConfig = connectionConfig(),
  onQuery?: (query: DbQueryEventNode) => void
): Database {
  const config = defineConfig({ connection: 'main', connections: { main: connection } })
  const app = new AppFactory().create(new URL('../tmp/', import.meta.url))
  const emitter = new EmitterFactory().create(app)
  if (onQuery) emitter.on('db:query', onQuery)
  return new Database(config, new LoggerFactory().create(), emitter)
}

/** Drop and create the package's tables, through the one table definition. */
export async function resetTables(db: Database, tables: TableNames = tableNames()) {
  const client = db.connection()
  await dropPurgeRunsTable(client.schema, tables)
  await dropWebhookTables(client.schema, tables)
  await dropDurableStreamTables(client.schema, tables)
  await dropDsSubscriptionTables(client.schema, tables)
  await dropMastraSnapshotsTable(client.schema, tables)
  await dropRunQueueTable(client.schema, tables)
  await dropThreadsTable(client.schema, tables)
  await dropCheckpointsTable(client.schema, tables)
  await dropDoorTables(client.schema, tables)
  await dropParkingTables(client.schema, tables)
  await dropStreamTables(client.schema, tables)
  await createStreamTables(client.schema, client.dialect.name, tables)
  await addWriterColumns(client.schema, client.dialect.name, tables)
  await addStopColumns(client.schema, tables)
  await addTraceColumns(client.schema, tables)
  await createParkingTables(client.schema, client.dialect.name, tables)
  await addQueueIndexes(client.schema, tables)
  await createDoorTables(client.schema, client.dialect.name, tables)
  await addThreadListIndex(client.schema, tables)
  await createCheckpointsTable(client.schema, client.dialect.name, tables)
  await createThreadsTable(client.schema, client.dialect.name, tables)
  await createRunQueueTable(client.schema, client.dialect.name, tables)
  await createMastraSnapshotsTable(client.schema, client.dialect.name, tables)
  await createDurableStreamTables(client.schema, client.dialect.name, tables)
  await createDsSubscriptionTables(client.schema, client.dialect.name, tables)
  await createWebhookTables(client.schema, client.dialect.name, tables)
  await createPurgeRunsTable(client.schema, client.dialect.name, tables)
}

/**
 * Drop and create the LangGraph checkpointer's tables (`LucidSaver`; default: their default
 * names). Apart from {@link resetTables}: only the specs of LangGraph graphs need them.
 */
export async function resetLangGraphTables(db: Database, tables?: LangGraphTableNames) {
  const client = db.connection()
  await dropLangGraphTables(client.schema, tables)
  await createLangGraphTables(client.schema, client.dialect.name, tables)
}

/** Every row of every package table, as one string: equal before and after a refusal proves it changed nothing. */
export async function snapshotTables(db: Database, tables: TableNames = tableNames()) {
  const out: Record<string, unknown[]> = {}
  for (const table of Object.values(tables)) {
    out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
  }
  return JSON.stringify(out)
}
