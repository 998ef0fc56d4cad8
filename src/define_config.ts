import { configProvider } from '@adonisjs/core'
import type { TraceOptions } from './telemetry/traces/index.js'
import type { ApplicationService, ConfigProvider } from '@adonisjs/core/types'
import string from '@adonisjs/core/helpers/string'
import { RuntimeException } from '@adonisjs/core/exceptions'
import type { LucidSinkOptions } from './sink/lucid_sink.js'
import type { AgentRunner } from './runner/contract.js'
import type { ApproverPolicy } from './parking/types.js'
import type { AgUiDoorOptions } from './agui/door/index.js'
import type { UiMessageDoorOptions } from './ui_message/door/index.js'
import type { DurableStreamsOptions } from './durable_streams/write/door.js'
import { isMultitaskStrategy, MULTITASK_STRATEGIES } from './door/multitask.js'
import type { AdminAuthorizer, DisplayName, PrincipalResolver } from './http/principal.js'
import { DEFAULTS } from './defaults.js'
import type { HistoryBounds } from './runner/conversation.js'
import type { PurgeScheduleOptions } from './sink/purge_schedule.js'
import { purgeOf, type PurgeConfig } from './purge_config.js'
import {
  resolveWebhooks,
  type WebhookEndpoint,
  type WebhooksOptions,
} from './telemetry/webhooks/index.js'
import {
  RequestLimits,
  memoryLimiter,
  resolveLimits,
  type LimiterManagerLike,
  type LimitsConfig,
} from './http/limits.js'

/** A duration in milliseconds, or a string such as `'50ms'`, `'15s'`, `'7d'`. */
export type Duration = number | string

/**
 * `config/agent_stream.ts`. Every field is optional; durations take milliseconds or a string
 * (`'15s'`, `'24h'`).
 */
export interface AgentStreamConfig {
  /** Lucid connection the tables live on; the default connection when absent. */
  connection?: string
  /** Table names (defaults `agent_streams`, `agent_stream_frames`). */
  tables?: LucidSinkOptions['tables']
  /** Longest time text is held back to coalesce into one row. Default `40ms`. */
  coalesceWindow?: Duration
  /**
   * A writer silent this long (a crashed process) has its segment continued by another replica
   * (a runner with `continue`, such as `aiSdkAgent`) or its stream failed. Default `15s`.
   */
  lease?: Duration
  /**
   * The database going away (a restart, a failover) while runs are in flight: for up to `bound`
   * (default `30s`) writers hold their frames in memory, at most `bufferBytes` each (default
   * 4194304, 4 MiB), retry with backoff and commit them in order once it is back; readers and the
   * LISTEN connection reconnect and resume. Past either the run fails at once: an `error` frame
   * `run_failed` and the end, written as soon as the database answers.
   */
  outage?: { bound?: Duration; bufferBytes?: number }
  /**
   * Cross-replica wake-ups: `notifiers.pg()` (LISTEN/NOTIFY, PostgreSQL only, with a 1 s poll as
   * safety net), `notifiers.redis()` (Redis pub/sub through `@adonisjs/redis`, any database, same
   * safety net), `notifiers.poll()`, or `'auto'` (pg on PostgreSQL, poll elsewhere; the
   * default), `'notify'`, `'poll'`.
   */
  notifier?: LucidSinkOptions['notifier']
  /** Poll of followed streams' heads. Default `100ms` (`1s` beside NOTIFY). */
  pollInterval?: Duration
  /** How long an ended stream is kept before `agent-stream:purge` removes it. Default `24h`. */
  ttl?: Duration
  /**
   * The background purge (docs/operations.md): every replica's web process removes the streams
   * `ttl` made due `every` (a duration, at least `1s`), `batchSize` streams per transaction
   * (1 to 10000, default 100). Unset: no background purge (`agent-stream:purge` from cron).
   */
  purge?: PurgeConfig
  /** Cap on one frame's serialized size, in bytes. Default 262144 (256 KiB). */
  maxFrameBytes?: number
  /**
   * Cap on the agent's state (`state` event frames) and on the page's state a door takes
   * (`RunAgentInput.state`, useChat's body `state`), in bytes of JSON. Default 65536 (64 KiB).
   */
  maxStateBytes?: number
  /**
   * UTF-8 bytes of frames held in memory for one reader and not yet sent on (one frame when a
   * frame is larger): what a client that stops reading can pin. Default 1048576 (1 MiB).
   */
  readerBytes?: number
  /** UTF-8 bytes of recent frames kept in memory per followed stream. Default 1048576 (1 MiB). */
  windowBytes?: number
  /**
   * Group commit: the plain appends (text, events, ends) of this replica's writers that are due
   * together ride in one transaction, each stream keeping its own seq, order and outcome.
   * `false`: one transaction per append. Default true.
   */
  groupCommit?: boolean
  /**
   * How much of a thread's earlier turns a run is given (`RunContext.conversation()`,
   * `aiSdkAgent`): at most `maxTurns` turns (default 100) and `maxBytes` UTF-8 bytes of their
   * stored frames as JSON (default 1048576, 1 MiB). Past either, the oldest turns are left out
   * whole (never half a turn). `maxTurns: 0`: no earlier turns.
   */
  history?: HistoryBounds
  /**
   * The host's agent: `start` and `resume` (see `AgentRunner`), or a function of the app that
   * makes it, called once when the `agentStream` singleton is first made (after the app
   * booted): for an agent that needs the app's services, such as a LangGraph graph keeping its
   * checkpoints with `LucidSaver` on `await app.container.make('lucid.db')`.
   */
  runner?: AgentRunner | RunnerFactory
  /**
   * Who may decide a parked item, on every door and in the admin console. Default
   * (`defaultApproverPolicy`): the requester for `approver: 'requester'`, else a principal
   * holding the approver's role; an admin decides only what this allows.
   */
  approverPolicy?: ApproverPolicy
  /** How often each replica expires lapsed items and resumes ready suspensions. Default `5s`. */
  sweepInterval?: Duration
  /**
   * Who an HTTP request acts for, `{ id, roles? }` (roles are what a role approver checks).
   * Default: `ctx.auth.user` as `{ id }` (no roles) when present.
   */
  principal?: PrincipalResolver
  /**
   * Who may use the admin page (it shows every person's items). Default: nobody (every admin
   * request gets 403). Seeing is not deciding: `approverPolicy` decides.
   */
  admin?: AdminAuthorizer
  /**
   * A graceful shutdown (SIGTERM, `app.terminate()`): runs in flight on the replica get `drain`
   * to finish (default `5s`); then their agent's `signal` aborts and their streams end at once
   * with an `error` frame `replica_shutdown` (retryable). Meanwhile the replica refuses new runs
   * and resumes with 503 `replica_shutdown` and `Retry-After`.
   */
  shutdown?: { drain?: Duration }
  /**
   * Run control (a stop of a talking run, from any door, the native cancel or the console):
   * `grace` how long a stopped agent may take to return after its `signal` aborted before its
   * stream ends `cancelled` without it (default `2s`); `wait` how long a stop request waits for
   * the run's end before it answers `stopping` (202; default `5s`).
   */
  stop?: { grace?: Duration; wait?: Duration }
  /**
   * The name the admin console shows for a principal id (requesters, deciders), beside the id.
   * Asked once per id per request, shown as text (escaped), never as markup; a throw or a
   * non-string shows the id. Default: the id.
   */
  displayName?: DisplayName
  /**
   * Per-principal limits, kept by `@adonisjs/limiter` (install it): `runStarts` (every POST that
   * starts or continues a run, on both doors and the native route; default 30 per `1m`),
   * `streams` (streamed responses open at once, both doors and the native stream; default 16,
   * counts lapsing after `15m`), `decisions` (the decision routes; default 120 per `1m`); each
   * `false` for off. Past one: 429 `too_many_run_starts` / `too_many_streams` /
   * `too_many_decisions` with `Retry-After`, nothing written. Counted in the app's limiter
   * (`config/limiter.ts`, its default store or `store`) when it has one, else in this
   * replica's memory (per replica: not a fleet's limit). Default: no limits.
   */
  limits?: LimitsConfig
  /**
   * The useChat door (the AI SDK UI message stream): `multitaskStrategy`, what a new message on
   * a chat whose turn is streaming does (`'enqueue'`, the default, `'reject'`, `'interrupt'`,
   * `'rollback'`; a request may ask for another with a `multitaskStrategy` body field).
   */
  uiMessage?: Pick<UiMessageDoorOptions, 'multitaskStrategy'>
  /**
   * Messages one thread's busy-thread queue holds at most (`multitaskStrategy: 'enqueue'`, on
   * either door); one more is refused with 409 `queue_full`. Default 8.
   */
  maxQueuedRuns?: number
  /** The AG-UI door (`multitaskStrategy`: default `'reject'`, the protocol's rule). */
  agui?: AgUiDoorOptions & {
    /** A comment line after this long without an event. Default `15s`. */
    heartbeat?: Duration
  }
  /**
   * The Durable Streams door (`<prefix>/ds/v1/stream/*`): who may create, append to, read and
   * delete which stream (`authorize`; default: a stream is its creator's only), the long-poll
   * timeout, the catch-up chunk size, the SSE connection's length, the body cap.
   */
  durableStreams?: DurableStreamsOptions
  /**
   * OpenTelemetry (docs/observability.md): the agent's name in its spans (`agentName`; default
   * the runner's `name`, else `'agent'`) and whether the run's principal id goes on its root
   * span as `enduser.id` (`enduserId`; default false).
   */
  telemetry?: TraceOptions
  /**
   * Webhooks of the runs' lifecycle (`run.started`, `run.parked`, `run.decided`, ...; see
   * docs/webhooks.md), signed as Standard Webhooks: `endpoints` (`{ url, secret, events? }`,
   * the secret `whsec_...`), `maxAttempts` (default 8) before a delivery is dead, `timeout`
   * per attempt (default `10s`), `backoff` (first retry, default `5s`, doubling with jitter up
   * to `maxBackoff`, default `1h`), `pollInterval` (default `2s`), `retention` of delivered rows
   * (default `7d`). Off without an endpoint.
   */
  webhooks?: WebhooksConfig
}

/** `webhooks` in `config/agent_stream.ts` (durations in milliseconds or as strings). */
export interface WebhooksConfig {
  endpoints: WebhookEndpoint[]
  maxAttempts?: number
  timeout?: Duration
  backoff?: Duration
  maxBackoff?: Duration
  pollInterval?: Duration
  retention?: Duration
  /** The admin console's path, for the items' `consolePath` (default `/agent-stream/admin`). */
  consolePath?: string
}

/** Makes the host's agent from the booted app (`runner` in the config). */
export type RunnerFactory = (app: ApplicationService) => AgentRunner | Promise<AgentRunner>

/** The config once resolved: sink options in milliseconds, and the parking settings. */
export type ResolvedAgentStreamConfig = Omit<LucidSinkOptions, 'onError' | 'onInfo' | 'park'> & {
  history?: HistoryBounds
  runner?: AgentRunner
  approverPolicy?: ApproverPolicy
  sweepIntervalMs?: number
  drainMs?: number
  stop?: { graceMs?: number; waitMs?: number }
  principal?: PrincipalResolver
  admin?: AdminAuthorizer
  displayName?: DisplayName
  /** The per-principal limits (config `limits`), once the app's limiter is known; none: off. */
  limits?: RequestLimits
  uiMessage?: Pick<UiMessageDoorOptions, 'multitaskStrategy'>
  maxQueuedRuns?: number
  agui: AgUiDoorOptions & { heartbeatMs: number }
  durableStreams?: DurableStreamsOptions
  telemetry?: TraceOptions
  webhooks?: WebhooksOptions
  purge?: PurgeScheduleOptions
}

/**
 * The `webhooks` config in milliseconds, checked now (boot) by the runtime's own rule.
 * @throws InvalidWebhookConfigError naming the field
 */
function webhooksOf(config: WebhooksConfig | undefined): WebhooksOptions | undefined {
  if (config === undefined) return undefined
  // Whole milliseconds, as the rule below takes them ('1.5ms' is 2).
  const whole = (value: number | undefined) => (value === undefined ? value : Math.ceil(value))
  const options: WebhooksOptions = {
    endpoints: config.endpoints,
    maxAttempts: config.maxAttempts,
    timeoutMs: whole(ms('webhooks.timeout', config.timeout, 1)),
    backoffMs: whole(ms('webhooks.backoff', config.backoff, 1)),
    maxBackoffMs: whole(ms('webhooks.maxBackoff', config.maxBackoff, 1)),
    pollIntervalMs: whole(ms('webhooks.pollInterval', config.pollInterval, 10)),
    retentionMs: whole(ms('webhooks.retention', config.retention, 0)),
    consolePath: config.consolePath,
  }
  // Refused under the names this config gives them (`maxBackoff`, not `maxBackoffMs`).
  resolveWebhooks(options, undefined, {
    timeoutMs: 'timeout',
    backoffMs: 'backoff',
    maxBackoffMs: 'maxBackoff',
    pollIntervalMs: 'pollInterval',
    retentionMs: 'retention',
  })
  return options
}

function ms(name: string, value: Duration | undefined, min: number): number | undefined {
  if (value === undefined) return undefined
  let parsed: number
  try {
    parsed = string.milliseconds.parse(value)
  } catch {
    parsed = Number.NaN
  }
  if (!Number.isFinite(parsed) || parsed < min) {
    throw new RuntimeException(
      `Invalid "config/agent_stream.ts": "${name}" must be a duration of at least ${min} ms`
    )
  }
  return parsed
}

/**
 * Define the package's config (the config-provider pattern of official AdonisJS packages).
 *
 * @throws RuntimeException naming the field when a duration or size is out of range
 */
export function defineConfig(config: AgentStreamConfig): ConfigProvider<ResolvedAgentStreamConfig> {
  const resolved: ResolvedAgentStreamConfig = {
    connection: config.connection,
    tables: config.tables,
    coalesceWindowMs: ms('coalesceWindow', config.coalesceWindow, 0),
    leaseMs: ms('lease', config.lease, 100),
    outageBoundMs: ms('outage.bound', config.outage?.bound, 0),
    outageBufferBytes: config.outage?.bufferBytes,
    notifier: config.notifier,
    pollIntervalMs: ms('pollInterval', config.pollInterval, 10),
    ttlMs: ms('ttl', config.ttl, 0),
    maxFrameBytes: config.maxFrameBytes,
    maxStateBytes: config.maxStateBytes,
    readerBytes: config.readerBytes,
    windowBytes: config.windowBytes,
    groupCommit: config.groupCommit,
    history: config.history,
    runner: typeof config.runner === 'function' ? undefined : config.runner,
    approverPolicy: config.approverPolicy,
    sweepIntervalMs: ms('sweepInterval', config.sweepInterval, 10),
    drainMs: ms('shutdown.drain', config.shutdown?.drain, 0),
    stop: {
      graceMs: ms('stop.grace', config.stop?.grace, 0),
      waitMs: ms('stop.wait', config.stop?.wait, 0),
    },
    principal: config.principal,
    admin: config.admin,
    displayName: config.displayName,
    uiMessage: config.uiMessage,
    maxQueuedRuns: config.maxQueuedRuns,
    durableStreams: config.durableStreams,
    webhooks: webhooksOf(config.webhooks),
    purge: purgeOf(config.purge, ms),
    telemetry: config.telemetry,
    agui: {
      ...config.agui,
      heartbeatMs: ms('agui.heartbeat', config.agui?.heartbeat, 10) ?? DEFAULTS.heartbeatMs,
    },
  }
  for (const [name, min] of [
    ['maxFrameBytes', 64],
    ['maxStateBytes', 2],
    ['readerBytes', 1024],
    ['windowBytes', 1024],
  ] as const) {
    const value = config[name]
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) {
      throw new RuntimeException(
        `Invalid "config/agent_stream.ts": "${name}" must be an integer >= ${min}`
      )
    }
  }
  for (const [name, value] of [
    ['agui.multitaskStrategy', config.agui?.multitaskStrategy],
    ['uiMessage.multitaskStrategy', config.uiMessage?.multitaskStrategy],
  ] as const) {
    if (value !== undefined && !isMultitaskStrategy(value)) {
      throw new RuntimeException(
        `Invalid "config/agent_stream.ts": "${name}" must be one of ${MULTITASK_STRATEGIES.join(', ')}`
      )
    }
  }
  const maxQueued = config.maxQueuedRuns
  if (maxQueued !== undefined && (!Number.isSafeInteger(maxQueued) || maxQueued < 1)) {
    throw new RuntimeException(
      'Invalid "config/agent_stream.ts": "maxQueuedRuns" must be an integer >= 1'
    )
  }
  for (const name of ['maxTurns', 'maxBytes'] as const) {
    const value = config.history?.[name]
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      throw new RuntimeException(
        `Invalid "config/agent_stream.ts": "history.${name}" must be an integer >= 0`
      )
    }
  }
  const limits = config.limits === undefined ? undefined : resolveLimits(config.limits)
  const bufferBytes = config.outage?.bufferBytes
  if (bufferBytes !== undefined && (!Number.isInteger(bufferBytes) || bufferBytes < 0)) {
    throw new RuntimeException(
      'Invalid "config/agent_stream.ts": "outage.bufferBytes" must be an integer >= 0'
    )
  }
  return configProvider.create(async (app) => {
    if (typeof config.runner === 'function') resolved.runner = await config.runner(app)
    // A notifier that loads a peer or a container binding (Redis) resolves it now: a missing
    // package or provider fails at startup, not in the background.
    const notifier = resolved.notifier
    if (typeof notifier === 'object' && notifier.prepare) {
      await notifier.prepare({ make: (binding) => app.container.make(binding as any) })
    }
    if (!limits) return resolved
    // The app's limiter (`config/limiter.ts`) when it has one, else one in memory.
    const container = app.container as unknown as {
      hasBinding(binding: string): boolean
      make(binding: string): Promise<unknown>
    }
    const appLimiter = container.hasBinding('limiter.manager')
      ? ((await container.make('limiter.manager')) as LimiterManagerLike)
      : await memoryLimiter()
    const logger = (await app.container.make('logger')) as {
      warn(details: object, message: string): void
    }
    const requestLimits = new RequestLimits(limits, appLimiter, (error) =>
      logger.warn({ err: error }, 'agent-stream: the limiter failed; the request was admitted')
    )
    return { ...resolved, limits: requestLimits }
  })
}
