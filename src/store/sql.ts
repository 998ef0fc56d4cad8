import type { TransactionClientContract } from '@adonisjs/lucid/types/database'

/**
 * Now, in epoch milliseconds of the database's clock (see clock.ts): how every time column is
 * stored (see schema.ts), and what every time a replica compares with them is.
 */
export { nowMs } from './clock.js'

/** Rows an UPDATE or DELETE changed, whatever shape the dialect's driver reports it in. */
export function affectedRows(result: unknown): number {
  if (typeof result === 'number') return result
  if (Array.isArray(result)) return typeof result[0] === 'number' ? result[0] : result.length
  return Number(result) || 0
}

/**
 * Run `work` in a transaction of `client`, committed when it returns and rolled back when it
 * throws. The COMMIT is checked: knex resolves `commit()` even when the COMMIT itself failed (the
 * connection dropped) and reports that error on the transaction's execution promise only, which
 * would pass a lost write off as stored.
 *
 * @throws what `work` throws (rolled back), or the COMMIT's error (its outcome is then unknown:
 *   the connection may have dropped after the server committed)
 */
export async function inTransaction<T>(
  client: { transaction(): Promise<TransactionClientContract> },
  work: (trx: TransactionClientContract) => Promise<T>
): Promise<T> {
  const trx = await client.transaction()
  let result: T
  try {
    result = await work(trx)
  } catch (error) {
    // Ended under the work (see endedUnder): its first error is the cause.
    if (trx.isCompleted) throw (await endedUnder(trx)) ?? error
    await trx.rollback().catch(() => {})
    throw error
  }
  await commitChecked(trx)
  return result
}

/**
 * Why a transaction ended before its work did, if it did: knex hands out a transaction whose
 * BEGIN failed (a pooled connection the server dropped) and tells that error only on its
 * execution promise; every query then throws "Transaction query already complete", which hides
 * that the database went away. Returns that first error, or `null`.
 */
export async function endedUnder(trx: TransactionClientContract): Promise<unknown> {
  const execution = (trx.knexClient as { executionPromise?: Promise<unknown> }).executionPromise
  if (!execution) return null
  // Settled by then when the transaction ended under its work; never waited for otherwise.
  const pending = Symbol('pending')
  const outcome = await Promise.race([
    execution.then(
      () => null,
      (error: unknown) => error ?? null
    ),
    new Promise((resolve) => setImmediate(() => resolve(pending))),
  ])
  return outcome === pending ? null : outcome
}

/**
 * `trx.commit()`, then the COMMIT's own outcome (see {@link inTransaction}).
 *
 * @throws the COMMIT's error (its outcome unknown)
 */
export async function commitChecked(trx: TransactionClientContract): Promise<void> {
  await trx.commit()
  await (trx.knexClient as { executionPromise?: Promise<unknown> }).executionPromise
}

/**
 * Run an `INSERT ... ON CONFLICT DO NOTHING` (MySQL's `INSERT IGNORE`) built with `.onConflict(key)
 * .ignore()` on `trx`, and tell whether it inserted its row: the drivers report it in different
 * shapes (PostgreSQL and SQLite through `RETURNING`, MySQL through `affectedRows`), and knex's own
 * result says nothing reliable (SQLite's last row id, MySQL's insert id).
 */
export async function insertedIgnoring(
  trx: TransactionClientContract,
  query: {
    returning(column: string): unknown
    toSQL(): { toNative(): { sql: string; bindings: readonly unknown[] } }
  },
  key: string
): Promise<boolean> {
  if (trx.dialect.name === 'mysql') {
    const { sql, bindings } = query.toSQL().toNative()
    const result = await trx.rawQuery(sql, bindings as any[])
    return Number(result?.[0]?.affectedRows ?? 0) > 0
  }
  const rows = (await query.returning(key)) as unknown[]
  return rows.length > 0
}
