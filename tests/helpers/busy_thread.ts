import type { Database } from '@adonisjs/lucid/database'
import { tableNames } from '../../src/store/schema.js'

/** What a busy thread's tests read of the store: its rows while a run talks, its queue. */

const tables = tableNames()

/**
 * Every row of every package table, but the columns a running writer's lease renewal moves
 * (`agent_streams.lease_expires_at`, `updated_at`): equal before and after a refusal proves it
 * wrote nothing while a run talks.
 */
export async function rowsOf(db: Database) {
  const out: Record<string, unknown[]> = {}
  for (const table of Object.values(tables)) {
    const rows = await db.connection().from(table).select('*').orderByRaw('1, 2')
    out[table] = rows.map((row) => {
      if (table !== tables.streams) return row
      const rest = { ...row }
      delete rest.lease_expires_at
      delete rest.updated_at
      return rest
    })
  }
  return JSON.stringify(out)
}

/** Waits until `threadId`'s queue holds `n` messages. */
export async function queued(db: Database, threadId: string, n: number) {
  for (let i = 0; i < 400; i++) {
    const rows = await db.connection().from(tables.runQueue).where('thread_id', threadId)
    if (rows.length === n) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`the queue never held ${n}`)
}
