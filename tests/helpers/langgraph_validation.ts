/**
 * The official checkpointer validation (`@langchain/langgraph-checkpoint-validation`, a Vitest
 * suite) run against `LucidSaver` on the suite's database (`DB`: sqlite, pg, mysql): every
 * default spec (put, putWrites, getTuple, list, deleteThread) and the opt-in
 * `getDeltaChannelHistory` spec. Run by scripts/test_langgraph_checkpointer.mjs (never by Japa:
 * it is not a `.spec.ts`); tests/langgraph_checkpointer.spec.ts runs that script.
 *
 * The saver writes to tables of its own (`lgv_*`), created once and emptied for every new
 * checkpointer, as the suite requires (one checkpointer's rows are never another's).
 */
import type { Database } from '@adonisjs/lucid/database'
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation'
import type { CheckpointSaverTestInitializer } from '@langchain/langgraph-checkpoint-validation'
import { LucidSaver } from '../../src/runners/langgraph/checkpointer.js'
import { dropLangGraphTables, langGraphTableNames } from '../../src/store/langgraph_schema.js'
import { createDatabase, resetLangGraphTables } from './db.js'

const tables = langGraphTableNames({
  checkpoints: 'lgv_checkpoints',
  blobs: 'lgv_blobs',
  writes: 'lgv_writes',
})

let db: Database

const initializer: CheckpointSaverTestInitializer<LucidSaver> = {
  checkpointerName: `LucidSaver (${process.env.DB ?? 'sqlite'})`,
  beforeAllTimeout: 30_000,
  async beforeAll() {
    db = createDatabase()
    await resetLangGraphTables(db, tables)
  },
  async afterAll() {
    await dropLangGraphTables(db.connection().schema, tables)
    await db.manager.closeAll()
  },
  async createCheckpointer() {
    for (const table of [tables.writes, tables.blobs, tables.checkpoints]) {
      await db.connection().from(table).delete()
    }
    return new LucidSaver(db, { tables })
  },
}

validate(initializer)
deltaChannelHistoryTests(initializer)
