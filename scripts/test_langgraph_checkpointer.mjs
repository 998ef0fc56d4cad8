#!/usr/bin/env node
/**
 * `npm run test:langgraph-checkpointer`: LangGraph's official checkpointer validation
 * (`@langchain/langgraph-checkpoint-validation`, a Vitest suite) against `LucidSaver` on the
 * database named by `DB` (sqlite, the default; pg; mysql), through tests/helpers/db.ts's
 * connection (PG_DATABASE, MYSQL_DATABASE, SQLITE_FILE ... as for the Japa suite). Prints one
 * closing line, `langgraph checkpointer validation (DB): N passed, N failed, N skipped`, and
 * exits non-zero when a test failed or none ran.
 */
import { runVitestSuite } from './vitest_suite.mjs'

await runVitestSuite({
  file: 'tests/helpers/langgraph_validation.ts',
  label: `langgraph checkpointer validation (${process.env.DB ?? 'sqlite'})`,
  testTimeout: 30_000,
})
