/**
 * Whether an error from a query means "the database could not be reached, try again": the
 * connection was refused, reset or terminated (a restart, a failover), the server is starting or
 * shutting down or has too many connections, the pool could not hand out a connection, or the
 * transaction was rolled back by a deadlock or serialization failure. Anything else (a constraint, a closed stream, bad SQL) is
 * not retried.
 *
 * Only the first four cases can leave a COMMIT's outcome unknown; a caller that retries a write
 * must check whether it landed (see `CommitPlan.token`).
 */
export function isTransientError(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false
  const { code, errno, name, message } = error as {
    code?: unknown
    errno?: unknown
    name?: unknown
    message?: unknown
  }
  if (typeof code === 'string') {
    if (NODE_CODES.has(code) || MYSQL_CODES.has(code)) return true
    // SQLite: another process holds the database's lock past busy_timeout.
    if (code === 'SQLITE_BUSY') return true
    // PostgreSQL SQLSTATE: class 08 (connection exception), 57P01-57P03 (admin shutdown, crash
    // shutdown, cannot connect now), 53300 (too many connections, as a restart's reconnect storm
    // can cause), 40001/40P01 (serialization failure, deadlock).
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[1-3]$/.test(code)) return true
    if (code === '53300' || code === '40001' || code === '40P01') return true
  }
  // MariaDB/MySQL server errors by number: shutdown in progress, too many connections, deadlock,
  // lock wait timeout, connection killed.
  if (typeof errno === 'number' && MYSQL_ERRNOS.has(errno)) return true
  if (name === 'KnexTimeoutError') return true
  return typeof message === 'string' && MESSAGES.test(message)
}

const NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTCONN',
  'EAI_AGAIN',
])

const MYSQL_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
])

const MYSQL_ERRNOS = new Set([1040, 1053, 1077, 1078, 1079, 1080, 1205, 1213, 1927, 2006, 2013])

/** Drivers that report a lost connection without a code (pg, mysql2, tarn). */
const MESSAGES =
  /connection terminated|terminating connection|not queryable|closed state|server has gone away|lost connection|connection lost|connection is closed|the database system is (starting up|shutting down|in recovery mode)/i

/**
 * Whether `error` is a transaction rolled back by the database to break a lock conflict: a
 * deadlock (PostgreSQL 40P01, MariaDB/MySQL 1213 `ER_LOCK_DEADLOCK`), a serialization failure
 * (40001) or a lock wait timeout (1205 `ER_LOCK_WAIT_TIMEOUT`). Normal operation under
 * concurrency, not an outage: the transaction is run again, and it is logged at most at debug.
 */
export function isLockConflict(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false
  const { code, errno } = error as { code?: unknown; errno?: unknown }
  if (typeof code === 'string' && LOCK_CODES.has(code)) return true
  return typeof errno === 'number' && (errno === 1213 || errno === 1205)
}

const LOCK_CODES = new Set(['40P01', '40001', 'ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT'])

/**
 * Run `attempt` (a whole transaction) again while it fails with {@link isLockConflict}, up to
 * `times` runs, a few milliseconds apart (jittered, so the two sides do not collide again).
 * @throws the last error, or any other error at once
 */
export async function retryLockConflicts<T>(attempt: () => Promise<T>, times = 5): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await attempt()
    } catch (error) {
      if (run >= times || !isLockConflict(error)) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * run))
    }
  }
}

/**
 * Whether an error is the database refusing a write for good: trying again stores nothing more
 * (an integrity constraint, a check constraint, a trigger that raises). Never transient.
 * PostgreSQL SQLSTATE class 23 (integrity constraint violation: 23514 check, 23505 unique, ...)
 * and P0001 (raised by PL/pgSQL); MySQL/MariaDB a trigger's SIGNAL (1644), a check constraint
 * (3819 MySQL, 4025 MariaDB), a duplicate, null or foreign key (1062, 1048, 1451, 1452) and
 * SQLSTATE class 23; SQLite `SQLITE_CONSTRAINT_*` (a trigger's RAISE included).
 */
export function isRefusal(error: unknown): boolean {
  if (!error || typeof error !== 'object' || isTransientError(error)) return false
  const { code, errno, sqlState } = error as { code?: unknown; errno?: unknown; sqlState?: unknown }
  if (typeof code === 'string') {
    if (/^23[0-9A-Z]{3}$/.test(code) || code === 'P0001') return true
    if (code.startsWith('SQLITE_CONSTRAINT')) return true
  }
  if (typeof errno === 'number' && REFUSAL_ERRNOS.has(errno)) return true
  return typeof sqlState === 'string' && /^23[0-9A-Z]{3}$/.test(sqlState)
}

const REFUSAL_ERRNOS = new Set([1644, 3819, 4025, 1062, 1048, 1451, 1452])
