/**
 * `adonis-agent-stream/schema`: the package's tables, for the app's migrations. The published
 * migration (`stubs/make/migration/agent_stream_tables.stub`) creates and drops them with these;
 * an app migrated before a table or an index was added calls the one it lacks in a migration of
 * its own (docs/operations.md). Each takes Lucid's `this.schema`, the `create*` ones also the
 * dialect (`this.db.dialect.name`), and every one the table names (`tableNames(config.tables)`;
 * default the package's `agent_*` names).
 */
export {
  addQueueIndexes,
  addWriterColumns,
  createCheckpointsTable,
  createParkingTables,
  createStreamTables,
  dropCheckpointsTable,
  dropParkingTables,
  dropQueueIndexes,
  dropStreamTables,
  dropWriterColumns,
  tableNames,
} from '../store/schema.js'
export {
  addThreadListIndex,
  createDoorTables,
  createRunQueueTable,
  createThreadsTable,
  dropDoorTables,
  dropRunQueueTable,
  dropThreadListIndex,
  dropThreadsTable,
} from '../store/door_schema.js'
export { addStopColumns, dropStopColumns } from '../store/stop_schema.js'
export { addTraceColumns, dropTraceColumns } from '../store/trace_schema.js'
export {
  createLangGraphTables,
  dropLangGraphTables,
  langGraphTableNames,
} from '../store/langgraph_schema.js'
export { createMastraSnapshotsTable, dropMastraSnapshotsTable } from '../store/mastra_schema.js'
export { createDurableStreamTables, dropDurableStreamTables } from '../store/durable_schema.js'
export {
  createDsSubscriptionTables,
  dropDsSubscriptionTables,
} from '../store/ds_subscriptions_schema.js'
export { createWebhookTables, dropWebhookTables } from '../store/webhook_schema.js'
export { createPurgeRunsTable, dropPurgeRunsTable } from '../store/purge_runs_schema.js'
export type { TableNames } from '../store/schema.js'
export type { LangGraphTableNames } from '../store/langgraph_schema.js'
