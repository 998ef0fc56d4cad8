import type { Database } from '@adonisjs/lucid/database'
import type { CheckpointRowStore } from '../../src/checkpoints/index.js'

/** A frames read as sent: the rows of its `seq between from and to`. */
export interface FramesRead {
  from: number
  to: number
}

/**
 * Every frames read the database is sent from now on (knex's `query` event, in start order),
 * told to `onRead`; call the result to stop.
 */
export function watchFramesReads(db: Database, onRead: (read: FramesRead) => void) {
  const clients = new Set([db.connection().getReadClient(), db.connection().getWriteClient()])
  const listener = (query: { sql: string; bindings?: unknown[] }) => {
    if (!/from .agent_stream_frames./i.test(query.sql) || !/ between /i.test(query.sql)) return
    const numbers = (query.bindings ?? []).filter((b) => typeof b === 'number') as number[]
    onRead({ from: numbers.at(-2)!, to: numbers.at(-1)! })
  }
  for (const client of clients) client.on('query', listener)
  return () => clients.forEach((client) => client.off('query', listener))
}

/**
 * A door's stored checkpoint read (`rows.nearest`) answered only once a frames read of the rows
 * after row `after` started, or a second passed: `beside()` says whether it had (read after
 * the checkpoint came, it could not have). `stop()` ends the watch.
 */
export function checkpointHeldUntilRead(db: Database, rows: CheckpointRowStore, after: number) {
  let started!: () => void
  const framesRead = new Promise<boolean>((resolve) => (started = () => resolve(true)))
  // (A read of the rows after `after` starts at row `after`: `readPage`.)
  const stop = watchFramesReads(db, (read) => read.from === after && started())
  const nearest = rows.nearest.bind(rows)
  let beside: boolean | null = null
  rows.nearest = async (...args) => {
    const found = await nearest(...args)
    beside = await Promise.race([
      framesRead,
      new Promise<boolean>((resolve) => setTimeout(resolve, 1_000, false)),
    ])
    return found
  }
  return { beside: () => beside, stop }
}
