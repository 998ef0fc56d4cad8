import type { QueryClientContract } from '@adonisjs/lucid/types/database'

/**
 * The one clock every replica's times are in: the database's. Leases, claims, an item's expiry,
 * `created_at`/`ended_at`, a purge's cutoff: everything written to the tables and compared by
 * another replica is in database time, so a replica whose own clock is off (a host 30 s ahead)
 * neither kills other replicas' runs nor has its own killed.
 *
 * How: the database's time is read (`measure`), with the round trip timed on this process's
 * monotonic clock; from then on database time is that reading plus the monotonic time elapsed
 * (so a jump of the host's wall clock changes nothing). The error is at most half a round trip;
 * a reading whose round trip was slow (a stalled database) is not taken. One estimate per
 * process: a process's sinks share their database (several databases with clocks apart are
 * not supported). Until the first reading, the host's clock is used; the sink reads it before
 * its first write (`StreamStore.open`) and every sweep reads it again.
 *
 * SQLite runs in this process: its clock is the host's, and so is this one.
 */

/** A reading: database time (epoch ms) at a monotonic instant, and the round trip it took. */
interface Reading {
  db: number
  mono: number
  rttMs: number
}

let reading: Reading | null = null

/** A reading whose round trip took longer than this is not taken (the estimate would be off). */
const MAX_RTT_MS = 1000

/** Now in database time, epoch milliseconds (the host's clock until the first reading). */
export function nowMs(): number {
  if (!reading) return Date.now()
  return Math.round(reading.db + (performance.now() - reading.mono))
}

/**
 * An ISO-8601 instant of this host's clock (an agent's `Date.now() + ...`) as the same instant in
 * database time; unchanged when it does not parse, or when the clocks agree within the
 * estimate's own error (half its round trip).
 */
export function hostToDatabaseInstant(iso: string): string {
  const ms = Date.parse(iso)
  const offset = nowMs() - Date.now()
  if (!Number.isFinite(ms) || !reading || Math.abs(offset) <= reading.rttMs / 2 + 1) return iso
  return new Date(ms + offset).toISOString()
}

/** What one reading found: this host's clock minus the database's (positive: ahead). */
export interface ClockReading {
  skewMs: number
  rttMs: number
}

/**
 * Read the database's time once and take it as the estimate when its round trip was fast enough
 * (and no slower than twice the estimate's own, unless that one is old). Returns the skew this
 * reading measured, or `null` when the dialect has no clock query (the host's clock is used).
 *
 * @throws what the query throws
 */
export async function measure(client: QueryClientContract): Promise<ClockReading | null> {
  // The first read may open a connection (a slow round trip): a second one makes the estimate.
  if (!reading) await readOnce(client)
  return readOnce(client)
}

async function readOnce(client: QueryClientContract): Promise<ClockReading | null> {
  const sql = CLOCK_SQL[dialectOf(client.dialect.name)]
  if (!sql) return null
  const started = performance.now()
  const result = await client.rawQuery(sql)
  const ended = performance.now()
  const value = Number(firstValue(result))
  if (!Number.isFinite(value)) return null
  const rttMs = ended - started
  // The server read its clock somewhere in the round trip: its middle is the best guess.
  const mono = started + rttMs / 2
  const candidate = { db: value, mono, rttMs }
  const old = reading
  if (!old || (rttMs <= MAX_RTT_MS && (rttMs <= old.rttMs * 2 + 5 || ended - old.mono > 60_000))) {
    reading = candidate
  }
  return { skewMs: Math.round(Date.now() - (performance.now() - mono) - value), rttMs }
}

/** Forget the estimate (tests). */
export function resetClock() {
  reading = null
}

type ClockDialect = 'pg' | 'mysql' | 'sqlite' | 'other'

function dialectOf(name: string): ClockDialect {
  if (name === 'postgres' || name === 'redshift') return 'pg'
  if (name === 'mysql') return 'mysql'
  if (name.includes('sqlite')) return 'sqlite'
  return 'other'
}

/** The query reading the database's clock, epoch milliseconds, by dialect. */
const CLOCK_SQL: Record<ClockDialect, string | null> = {
  // clock_timestamp(): the time at evaluation, not the transaction's start.
  pg: 'select (extract(epoch from clock_timestamp()) * 1000)::float8 as now_ms',
  // SYSDATE(3): the time at evaluation; UNIX_TIMESTAMP undoes the session's time zone.
  mysql: 'select unix_timestamp(sysdate(3)) * 1000 as now_ms',
  sqlite: "select (julianday('now') - 2440587.5) * 86400000.0 as now_ms",
  other: null,
}

/** The first column of the first row, whatever shape the driver returns a raw query in. */
function firstValue(result: any): unknown {
  const rows = Array.isArray(result)
    ? Array.isArray(result[0])
      ? result[0]
      : result
    : (result?.rows ?? [])
  const row = rows[0]
  return row ? (row.now_ms ?? Object.values(row)[0]) : undefined
}
