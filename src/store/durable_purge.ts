import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'

/**
 * The purge's part of the Durable Streams write path's streams (`durable_schema.ts`): a stream
 * whose TTL or expiry passed is ended (from its expiry on, every request finds none), so the
 * package's purge removes it with its rows like any ended stream; metadata and producer rows
 * left without their stream (a purge removed it) go. Nothing when the tables are not there (a
 * schema migrated before them).
 */
export async function settleDurableStreams(
  client: QueryClientContract,
  tables: TableNames,
  now: number
): Promise<void> {
  if (!(await client.schema.hasTable(tables.durableStreams))) return
  await client
    .from(tables.streams)
    .whereIn('run_id', (query) =>
      query
        .from(tables.durableStreams)
        .whereNotNull('expires_at')
        .where('expires_at', '<=', now)
        .select('run_id')
    )
    .where('status', 'open')
    .update({
      status: 'ended',
      // Ended when it expired (the purge's cutoff counts from there).
      ended_at: client.raw('(select ?? from ?? where ?? = ??)', [
        `${tables.durableStreams}.expires_at`,
        tables.durableStreams,
        `${tables.durableStreams}.run_id`,
        `${tables.streams}.run_id`,
      ]),
      updated_at: now,
    })
}

/** Delete write-path metadata and producer rows whose stream is gone. Returns the rows deleted. */
export async function deleteDurableOrphans(
  client: QueryClientContract,
  tables: TableNames
): Promise<number> {
  if (!(await client.schema.hasTable(tables.durableStreams))) return 0
  let deleted = 0
  for (const table of [tables.durableProducers, tables.durableStreams]) {
    deleted += Number(
      await client
        .from(table)
        .whereNotExists((q) =>
          q
            .from(tables.streams)
            .whereRaw('?? = ??', [`${tables.streams}.run_id`, `${table}.run_id`])
        )
        .delete()
    )
  }
  return deleted
}
