/**
 * The name of every metric the package records (instrumentation scope `adonis-agent-stream`),
 * under the `agent_stream.` namespace, in OpenTelemetry's naming rules (units in UCUM, not in
 * the names). docs/observability.md#metrics describes each.
 */
export const METRIC = {
  framesWritten: 'agent_stream.write.frames',
  bytesWritten: 'agent_stream.write.size',
  groupCommitStreams: 'agent_stream.group_commit.streams',
  outageBufferUsage: 'agent_stream.outage_buffer.usage',
  liveReaders: 'agent_stream.reader.live',
  reattaches: 'agent_stream.reader.reattaches',
  replayRows: 'agent_stream.reader.replay.rows',
  notifierLag: 'agent_stream.notifier.lag',
  parkDuration: 'agent_stream.park.duration',
  resumeDelay: 'agent_stream.park.resume.delay',
  expiries: 'agent_stream.park.expiries',
  runsStarted: 'agent_stream.run.started',
  runsEnded: 'agent_stream.run.ended',
  webhookAttempts: 'agent_stream.webhook.attempts',
  webhookDelay: 'agent_stream.webhook.delivery.delay',
} as const

/** The attributes metrics carry: each of a few values only (never an id, a principal or text). */
export const ATTRIBUTE = {
  /** OpenTelemetry's database attribute: `postgresql`, `mysql`, `sqlite`, `other_sql`. */
  dbSystem: 'db.system.name',
  /** The stored frame's kind (`text`, `tool_call`, `approval`, ...). */
  frameKind: 'agent_stream.frame.kind',
  /** Which door served it: `agui`, `ui_message`. */
  door: 'agent_stream.door',
  /** The notifier a wake-up came through: `pg`, `redis`. */
  notifier: 'agent_stream.notifier',
  /** How a park was settled: `approved`, `rejected`, `answered`, `expired`, `cancelled`. */
  decision: 'agent_stream.decision',
  /** Where the decision came from: `chat`, `admin`, `api`, `expiry`, `cancel`, `system`, `other`. */
  decidedVia: 'agent_stream.decided_via',
  /** How a run ended: `finished`, `failed`, `cancelled`. */
  outcome: 'agent_stream.outcome',
  /** A webhook's lifecycle event type: `run.started`, ..., `run.expired` (eight values). */
  webhookEvent: 'agent_stream.webhook.event',
  /** How a webhook attempt ended: `delivered`, `failed` (retried later), `dead`. */
  webhookResult: 'agent_stream.webhook.result',
} as const

const DIALECTS: Record<string, string> = {
  'postgres': 'postgresql',
  'pg': 'postgresql',
  'mysql': 'mysql',
  'mysql2': 'mysql',
  'better-sqlite3': 'sqlite',
  'sqlite3': 'sqlite',
  'libsql': 'sqlite',
}

/** OpenTelemetry's `db.system.name` for a Lucid dialect name (few values, whatever is passed). */
export function dbSystem(dialect: string): string {
  return DIALECTS[dialect] ?? 'other_sql'
}

/** One of `known`, or `other`: an attribute never carries a value it was not built for. */
export function oneOf<T extends string>(
  value: string | undefined,
  known: readonly T[]
): T | 'other' {
  return known.includes(value as T) ? (value as T) : 'other'
}
