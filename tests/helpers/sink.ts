import { getActiveTest } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import { LucidTokenStreamSink, type LucidSinkOptions } from '../../src/sink/lucid_sink.js'
import type { DeliveredFrame } from '../../src/core/frames.js'
import { createDatabase, resetTables } from './db.js'

let counter = 0
/** A run id unique to this process and test. */
export function runId(prefix = 'run') {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${++counter}`
}

/** A Lucid sink on fresh tables, closed (with its database) when the test ends. */
export async function setupSink(options: LucidSinkOptions = {}, reset = true) {
  const db = createDatabase()
  if (reset) await resetTables(db)
  const sink = new LucidTokenStreamSink(db, options)
  getActiveTest()?.cleanup(async () => {
    await sink.shutdown()
    await db.manager.closeAll()
  })
  return { db, sink }
}

/** Read a subscription to its end (or until `limit` frames), with a safety timeout. */
export async function collect(
  iterable: AsyncIterable<DeliveredFrame>,
  { limit = Number.POSITIVE_INFINITY, timeoutMs = 15_000 } = {}
): Promise<DeliveredFrame[]> {
  const frames: DeliveredFrame[] = []
  const iterator = iterable[Symbol.asyncIterator]()
  const deadline = Date.now() + timeoutMs
  while (frames.length < limit) {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`subscription did not end within ${timeoutMs} ms`)),
        Math.max(0, deadline - Date.now())
      )
    })
    try {
      const next = await Promise.race([iterator.next(), timeout])
      if (next.done) return frames
      frames.push(next.value)
    } finally {
      clearTimeout(timer)
    }
  }
  await iterator.return?.()
  return frames
}

/** The text a reader assembles from its frames. */
export function textOf(frames: { t: string; v?: string }[]) {
  return frames
    .filter((frame) => frame.t === 'text')
    .map((frame) => frame.v)
    .join('')
}

/** Count rows of a table for a run (what the database holds, read directly). */
export async function countRows(db: Database, table: string, id: string) {
  const row = await db.connection().from(table).where('run_id', id).count('* as total').first()
  return Number(row.total)
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Wait until `check` holds, asking every 20 ms, at most ~6 s; then fail naming `what`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, what: string) {
  for (let i = 0; i < 300; i++) {
    if (await check()) return
    await sleep(20)
  }
  throw new Error(`timed out waiting for ${what}`)
}
