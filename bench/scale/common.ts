/**
 * What every scale script shares: the databases it measures, the quick sizes, and how a row is
 * printed (one JSON object per line, read by bench/scale/compare.ts).
 */
import { loadavg } from 'node:os'
import type { ScaleRow } from './compare.js'

export const QUICK = process.env.BENCH_QUICK === '1'
/** `BENCH_FULL=1`: the largest sizes too (a million frames), which take long to seed. */
export const FULL = process.env.BENCH_FULL === '1'
export const DBS = (process.env.BENCH_DBS ?? 'sqlite').split(',').map((db) => db.trim())

/** The machine's 1-minute load average, as printed beside each value. */
export const load = () => Number(loadavg()[0].toFixed(2))

/** Print one measured value (with the load now). */
export function emit(row: Omit<ScaleRow, 'load'>) {
  process.stdout.write(`${JSON.stringify({ ...row, load: load() })}\n`)
}

/** Percentiles as the rest of the bench takes them. */
export { percentile } from '../script.js'
