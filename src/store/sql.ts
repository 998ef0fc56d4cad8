import { DateTime } from 'luxon'

/** Now, in epoch milliseconds: how every time column is stored (see schema.ts). */
export const nowMs = () => DateTime.now().toMillis()

/** Rows an UPDATE or DELETE changed, whatever shape the dialect's driver reports it in. */
export function affectedRows(result: unknown): number {
  if (typeof result === 'number') return result
  if (Array.isArray(result)) return typeof result[0] === 'number' ? result[0] : result.length
  return Number(result) || 0
}
