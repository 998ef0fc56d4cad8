import { RuntimeException } from '@adonisjs/core/exceptions'
import string from '@adonisjs/core/helpers/string'
import type { Principal } from '../core/run.js'
import { ownerOf } from '../core/owner.js'
import { DEFAULTS } from '../defaults.js'
import type { Refusal } from './refusal.js'
import { ReplicaCap } from './replica_cap.js'

/**
 * Per-principal limits on the package's routes (config `limits`), kept by `@adonisjs/limiter`:
 * the app's limiter (`config/limiter.ts`, the container's `limiter.manager`) when it has one,
 * else one in memory. The one place both transports (the AdonisJS adapter and controllers, the
 * Fetch adapter) ask; a refusal is 429 `{ code, message }` naming the rule, with `Retry-After`,
 * before anything is written.
 *
 * - `runStarts`: every POST that starts or continues a run (AG-UI `agui.run`, useChat
 *   `chat.send`, the native `runs.start`), `requests` per `duration`;
 * - `streams`: the principal's streamed responses open at once (both doors' POSTs, re-attaches
 *   and resumes, the native `runs.stream`); a slot is given back when its response ends, the
 *   client's going away included;
 * - `decisions`: the decision routes (`items.approve|reject|answer`, `runs.cancel`), `requests`
 *   per `duration`;
 * - `replicaStreams`: the streamed responses (live viewers) this replica serves at once, every
 *   principal together, counted in this process's memory: past it 503 `too_many_viewers` with
 *   `Retry-After` (a load balancer sends the viewer to another replica). Off unless set.
 *
 * Anonymous callers (no principal) share one count, as they share their runs.
 */

/** A rate: `requests` per `duration` (milliseconds, or a string such as `'1m'`). */
export interface RateLimitRule {
  requests?: number
  duration?: number | string
}

/**
 * Streams open at once: `concurrent`, counted per principal. A count lapses `window`
 * (milliseconds or a string) after it was first taken: what bounds the slots a replica that
 * died holding streams leaves behind in a shared store (the cap runs loose for a moment then,
 * never tight).
 */
export interface StreamLimitRule {
  concurrent?: number
  window?: number | string
}

/**
 * Config `limits`: each rule at its default unless set, or `false` (off). `store`: the store of
 * the app's `config/limiter.ts` to count in (default: its default store); without an app
 * limiter, counts are kept in this replica's memory.
 */
export interface LimitsConfig {
  runStarts?: RateLimitRule | false
  streams?: StreamLimitRule | false
  decisions?: RateLimitRule | false
  /** The most streamed responses this replica serves at once (all principals); off unless set. */
  replicaStreams?: number | false
  store?: string
}

/** A rule as the limiter takes it: a count per window, in seconds. */
interface ResolvedRule {
  requests: number
  seconds: number
}

/** The rules once checked: `null` for a rule that is off. */
export interface ResolvedLimits {
  runStarts: ResolvedRule | null
  streams: ResolvedRule | null
  decisions: ResolvedRule | null
  replicaStreams?: number | null
  store?: string
}

/** The rules a limit names. */
export type LimitName = 'runStarts' | 'streams' | 'decisions' | 'replicaStreams'

function invalid(field: string, rule: string): never {
  throw new RuntimeException(`Invalid "config/agent_stream.ts": "limits.${field}" must be ${rule}`)
}

function count(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < 1) invalid(field, 'an integer >= 1')
  return value
}

function seconds(field: string, value: number | string | undefined, fallbackMs: number): number {
  let parsed: number
  try {
    parsed = value === undefined ? fallbackMs : string.milliseconds.parse(value)
  } catch {
    parsed = Number.NaN
  }
  if (!Number.isFinite(parsed) || parsed < 1000) invalid(field, 'a duration of at least 1s')
  return Math.ceil(parsed / 1000)
}

/**
 * Check config `limits`: each rule's values, its default where unset.
 *
 * @throws RuntimeException naming the field when a count or a duration is out of range
 */
export function resolveLimits(config: LimitsConfig): ResolvedLimits {
  const { runStarts, streams, decisions } = DEFAULTS.limits
  const rate = (name: 'runStarts' | 'decisions', rule: RateLimitRule | false | undefined) => {
    if (rule === false) return null
    const fallback = name === 'runStarts' ? runStarts : decisions
    return {
      requests: count(`${name}.requests`, rule?.requests, fallback.requests),
      seconds: seconds(`${name}.duration`, rule?.duration, fallback.duration),
    }
  }
  if (config.store !== undefined && (typeof config.store !== 'string' || config.store === '')) {
    invalid('store', 'a store name of config/limiter.ts')
  }
  return {
    runStarts: rate('runStarts', config.runStarts),
    decisions: rate('decisions', config.decisions),
    streams:
      config.streams === false
        ? null
        : {
            requests: count('streams.concurrent', config.streams?.concurrent, streams.concurrent),
            seconds: seconds('streams.window', config.streams?.window, streams.window),
          },
    replicaStreams:
      config.replicaStreams === undefined || config.replicaStreams === false
        ? null
        : count('replicaStreams', config.replicaStreams, 1),
    store: config.store,
  }
}

/** What the package asks of one limiter of `@adonisjs/limiter` (its `Limiter`). */
export interface LimiterLike {
  consume(key: string): Promise<unknown>
  decrement(key: string): Promise<unknown>
}

/** What the package asks of `@adonisjs/limiter`'s `LimiterManager` (the app's `limiter` service). */
export interface LimiterManagerLike {
  config: { default: unknown; stores: object }
  use(store: any, options: { requests: number; duration: number }): LimiterLike
}

/** The refusal of each rule: 429, its code and sentence (the rule's config name in it). */
const REFUSALS: Record<LimitName, { code: string; message: string }> = {
  runStarts: {
    code: 'too_many_run_starts',
    message: 'Too many runs started: try again later (limits.runStarts)',
  },
  streams: {
    code: 'too_many_streams',
    message: 'Too many streams open at once: close one or try again later (limits.streams)',
  },
  decisions: {
    code: 'too_many_decisions',
    message: 'Too many decisions: try again later (limits.decisions)',
  },
  replicaStreams: {
    code: 'too_many_viewers',
    message:
      'This replica serves as many streams as it may: try again later (limits.replicaStreams)',
  },
}

/**
 * The refusal of `rule`, `Retry-After` in `retryAfterSeconds` (at least 1): 429 for a
 * principal's rule, 503 for the replica's cap (the replica is full, not the caller's fault).
 */
export function limitRefusal(rule: LimitName, retryAfterSeconds: number): Refusal {
  return {
    status: rule === 'replicaStreams' ? 503 : 429,
    ...REFUSALS[rule],
    retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)),
  }
}

/** The seconds a limiter's refusal (`E_TOO_MANY_REQUESTS`) says to wait, or null for another error. */
function throttled(error: unknown): number | null {
  const refused = error as { code?: unknown; response?: { availableIn?: unknown } } | null
  if (refused?.code !== 'E_TOO_MANY_REQUESTS') return null
  const wait = refused.response?.availableIn
  return typeof wait === 'number' && Number.isFinite(wait) ? wait : 1
}

/** What an admitted request holds: `release()` gives its stream slot back (idempotent). */
export interface Admission {
  release(): void
}

/** What a request asks to be admitted for. */
export interface LimitNeeds {
  /** It starts or continues a run (`runStarts`). */
  runStart?: boolean
  /** Its answer may be a stream (`streams`): a slot held until {@link Admission.release}. */
  stream?: boolean
  /** It records a decision (`decisions`). */
  decision?: boolean
}

const ADMITTED: Admission = Object.freeze({ release() {} })

/**
 * The per-principal limits of a replica, over a `@adonisjs/limiter` manager: see the file's
 * head. A fault of the limiter's store (Redis or the database away) admits the request (the
 * limits are a guard, not a gate the store's outage may close) and is told to `onError` once
 * per outage: again only after the store answered in between.
 */
export class RequestLimits {
  readonly #limiters: Partial<Record<LimitName, LimiterLike>> = {}
  #failing = false
  /** Streamed responses this replica serves now (`replicaStreams`). */
  readonly #replica: ReplicaCap

  constructor(
    readonly rules: ResolvedLimits,
    manager: LimiterManagerLike,
    readonly onError: (error: unknown) => void = () => {}
  ) {
    const store = rules.store ?? manager.config.default
    if (typeof store !== 'string' || !Object.hasOwn(manager.config.stores, store)) {
      invalid('store', 'a store name of config/limiter.ts')
    }
    this.#replica = new ReplicaCap(rules.replicaStreams, () =>
      limitRefusal('replicaStreams', DEFAULTS.streamRetryAfterSeconds)
    )
    for (const name of ['runStarts', 'streams', 'decisions'] as const) {
      const rule = rules[name]
      if (rule) this.#limiters[name] = manager.use(store, { ...rule, duration: rule.seconds })
    }
  }

  /** A fault of the limiter's store: told once until the store answers again. */
  readonly #failed = (error: unknown) => {
    if (this.#failing) return
    this.#failing = true
    this.onError(error)
  }

  /** The limiter's key of `principal` under `rule`: anonymous callers share one. */
  #key(rule: LimitName, principal: Principal | null) {
    const owner = ownerOf(principal)
    return `agent_stream:${rule}:${owner === null ? 'anonymous' : `p:${owner}`}`
  }

  /**
   * Take one of `rule`'s requests: `taken` (false when the rule is off or its store failed: the
   * request goes on, nothing to give back), else the refusal.
   */
  async #take(
    rule: LimitName,
    principal: Principal | null
  ): Promise<{ taken: boolean } | { refused: Refusal }> {
    const limiter = this.#limiters[rule]
    if (!limiter) return { taken: false }
    const key = this.#key(rule, principal)
    try {
      await limiter.consume(key)
      this.#failing = false
      return { taken: true }
    } catch (error) {
      const wait = throttled(error)
      if (wait === null) {
        this.#failed(error)
        return { taken: false }
      }
      this.#failing = false
      if (rule !== 'streams') return { refused: limitRefusal(rule, wait) }
      // A refused consume still counted: a slot not held is given back at once.
      await limiter.decrement(key).catch(this.#failed)
      return { refused: limitRefusal(rule, DEFAULTS.streamRetryAfterSeconds) }
    }
  }

  /** Give a stream slot back. */
  #release(principal: Principal | null) {
    this.#limiters.streams?.decrement(this.#key('streams', principal)).catch(this.#failed)
  }

  /**
   * Admit `principal`'s request for what it `needs`, or refuse it (429, nothing taken: a slot
   * taken before a refused rate is given back). Ask only once the request is otherwise valid to
   * serve (its body read), and before anything is written.
   */
  async admit(
    principal: Principal | null,
    needs: LimitNeeds
  ): Promise<{ admitted: Admission } | { refused: Refusal }> {
    // The replica's own cap first: counted in memory, so a storm of viewers is refused (or
    // admitted) without a round trip to the limiter's store.
    return this.#replica.admit(needs.stream === true, () => this.#admit(principal, needs))
  }

  /** Streamed responses this replica serves now, under `replicaStreams` (0 when it is off). */
  get replicaStreams() {
    return this.#replica.held
  }

  async #admit(
    principal: Principal | null,
    needs: LimitNeeds
  ): Promise<{ admitted: Admission } | { refused: Refusal }> {
    let slot = false
    if (needs.stream) {
      const took = await this.#take('streams', principal)
      if ('refused' in took) return took
      slot = took.taken
    }
    for (const [rule, asked] of [
      ['runStarts', needs.runStart],
      ['decisions', needs.decision],
    ] as const) {
      if (!asked) continue
      const took = await this.#take(rule, principal)
      if ('refused' in took) {
        if (slot) this.#release(principal)
        return took
      }
    }
    if (!slot) return { admitted: ADMITTED }
    let held = true
    return {
      admitted: {
        release: () => {
          if (!held) return
          held = false
          this.#release(principal)
        },
      },
    }
  }
}

/**
 * Admit a request under `limits` (none: everyone is admitted): the one call of every
 * transport and controller.
 */
export function admit(
  limits: RequestLimits | undefined,
  principal: Principal | null,
  needs: LimitNeeds
): Promise<{ admitted: Admission } | { refused: Refusal }> | { admitted: Admission } {
  return limits ? limits.admit(principal, needs) : { admitted: ADMITTED }
}

/**
 * `@adonisjs/limiter`, loaded when limits are configured (an optional peer of the package).
 *
 * @throws RuntimeException saying to install it when it is missing
 */
async function loadLimiter() {
  try {
    return await import('@adonisjs/limiter')
  } catch {
    throw new RuntimeException(
      'agent-stream: "limits" needs @adonisjs/limiter (npm install @adonisjs/limiter)'
    )
  }
}

/**
 * The per-principal limits of `config` over `limiter` (the app's `limiter` service, e.g. with a
 * Redis or database store, counted across replicas), or over a new in-memory limiter of this
 * replica (counted per replica: behind a load balancer of N replicas a principal gets up to N
 * times the limits). Share one between handlers: each keeps its own counts.
 *
 * @throws RuntimeException naming the field of a bad rule, or a store the limiter lacks
 */
export async function createRequestLimits(
  config: LimitsConfig,
  options: { limiter?: LimiterManagerLike; onError?: (error: unknown) => void } = {}
): Promise<RequestLimits> {
  const rules = resolveLimits(config)
  return new RequestLimits(rules, options.limiter ?? (await memoryLimiter()), options.onError)
}

/**
 * A new `@adonisjs/limiter` manager with one memory store (`memory`): counts in this replica.
 *
 * @throws RuntimeException saying to install `@adonisjs/limiter` when it is missing
 */
export async function memoryLimiter(): Promise<LimiterManagerLike> {
  const { LimiterManager, stores } = await loadLimiter()
  return new LimiterManager({ default: 'memory', stores: { memory: stores.memory({}) } })
}
