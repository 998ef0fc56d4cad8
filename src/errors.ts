import { Exception } from '@adonisjs/core/exceptions'
import { errors as vineErrors } from '@vinejs/vine'
import { DEFAULTS } from './defaults.js'

/** One broken rule: the field path (`event.kind`, `messages.0.role`) and the rule's name. */
export interface ValidationIssue {
  field: string
  rule: string
}

/**
 * The broken rules of a VineJS validation error (`E_VALIDATION_ERROR`), field and rule only, never
 * the value; `null` for any other error (rethrow it).
 */
export function issuesOf(error: unknown): ValidationIssue[] | null {
  if (!(error instanceof vineErrors.E_VALIDATION_ERROR)) return null
  return (error.messages as ValidationIssue[]).map(({ field, rule }) => ({ field, rule }))
}

/**
 * One sentence naming each broken rule: `<subject>: "field" fails the "rule" rule; ...`. An empty
 * field (the whole value) reads as `whole`. The value itself is never quoted (it may be secret).
 */
export function describeIssues(subject: string, issues: ValidationIssue[], whole = '(body)') {
  const parts = issues.map((i) => `"${i.field || whole}" fails the "${i.rule}" rule`)
  return `${subject}: ${parts.join('; ')}`
}

/**
 * What {@link AgentStreamException.handle} needs of AdonisJS's `HttpContext` (structural, so this
 * file stays free of `@adonisjs/core/http`).
 */
export interface ErrorContext {
  response: {
    status(code: number): { json(body: unknown): unknown }
    header(name: string, value: string): unknown
  }
}

/**
 * The base of every error of this package: an AdonisJS `Exception` with a static `status` and
 * `code`, that answers for itself when it reaches the HTTP layer (AdonisJS calls `handle`):
 * JSON `{ code, message }` with its status.
 */
export abstract class AgentStreamException extends Exception {
  async handle(error: this, ctx: ErrorContext) {
    ctx.response.status(error.status).json({ code: error.code, message: error.message })
  }
}

/**
 * A frame the SPI does not allow: unknown `t`, a wrong field type, text that is not well-formed
 * Unicode, or a serialized size over `maxFrameBytes`. Thrown by `SinkWriter.write` before anything
 * is stored. The message names the field and the rule, never the value.
 */
export class InvalidFrameError extends AgentStreamException {
  static status = 422
  static code = 'E_INVALID_FRAME'

  /** Each broken rule: the field path (`event.kind`) and the rule's name (`string`, `maxBytes`). */
  readonly issues: ValidationIssue[]

  constructor(issues: ValidationIssue[]) {
    super(describeIssues('Invalid stream frame', issues, '(frame)'))
    this.issues = issues
  }
}

/**
 * The stream no longer takes frames: it was ended, failed (its writer's lease lapsed) or purged.
 * Reopen it with `sink.open(runId)` to continue.
 */
export class StreamClosedError extends AgentStreamException {
  static status = 409
  static code = 'E_STREAM_CLOSED'
  constructor(runId: string) {
    super(`The stream of run "${runId}" is not open for writing`)
  }
}

/**
 * The writer's lease was lost: its writer was taken for dead (its lease lapsed) and another
 * replica took its segment over (the stream's writer epoch moved on). The old writer writes
 * nothing more into the stream.
 */
export class LeaseLostError extends StreamClosedError {
  static code = 'E_LEASE_LOST'
}

/**
 * The run's frames could not be stored, so the run was stopped: the database stayed unreachable
 * past the outage bound (`outage.bound` in the config), the frames a writer held meanwhile
 * outgrew `outage.bufferBytes`, or the database refused a write (a constraint, a trigger: an
 * error that trying again does not cure). Its stream gets an `error` frame `run_failed` and its
 * end as soon as that can be stored; until then (or when it never can) its readers end with
 * that error from memory on the writer's replica and, once the lease lapses, on every other.
 * HTTP 503.
 */
export class StoreUnavailableError extends AgentStreamException {
  static status = 503
  static code = 'E_STORE_UNAVAILABLE'
  /**
   * `bound`: unreachable for too long; `buffer`: too many bytes held meanwhile; `refused`: the
   * database refused the write.
   */
  readonly reason: 'bound' | 'buffer' | 'refused'
  /** @param cause the database's error, for a refusal (logged, never sent to a client) */
  constructor(reason: 'bound' | 'buffer' | 'refused', cause?: unknown) {
    super(UNAVAILABLE[reason], cause === undefined ? undefined : { cause })
    this.reason = reason
  }
}

const UNAVAILABLE = {
  bound: 'The database stayed unreachable past the outage bound: the run was stopped',
  buffer:
    'The frames held while the database was unreachable outgrew the buffer: the run was stopped',
  refused: "The database refused to store the run's frames: the run was stopped",
}

/**
 * A warning, never thrown: this replica's clock disagrees with the database's by more than
 * `DEFAULTS.clockSkewWarnMs`. Nothing breaks (leases, claims and expiry use the database's
 * clock), but the host's time sync is off. Told through `onError` when the sink first reads the
 * database's clock and at every sweep while it lasts.
 */
export class ClockSkewError extends AgentStreamException {
  static status = 500
  static code = 'E_CLOCK_SKEW'
  /** This host's clock minus the database's, in milliseconds (positive: this host is ahead). */
  readonly skewMs: number
  constructor(skewMs: number) {
    super(
      `This replica's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} the database's: ` +
        "leases and expiry use the database's clock; fix the host's time sync (NTP)"
    )
    this.skewMs = skewMs
  }
}

/** A cursor string that this package did not mint (see `src/core/cursor.ts` for the grammar). */
export class InvalidCursorError extends AgentStreamException {
  static status = 400
  static code = 'E_INVALID_CURSOR'
  constructor() {
    super('Invalid stream cursor: expected "<seq>" or "<seq>.<offset>" with non-negative integers')
  }
}

/** A run id outside the accepted shape (1 to 191 characters of `[A-Za-z0-9_:.-]`). */
export class InvalidRunIdError extends AgentStreamException {
  static status = 400
  static code = 'E_INVALID_RUN_ID'
  constructor() {
    super('Invalid run id: expected 1 to 191 characters of letters, digits, "_", "-", ":" or "."')
  }
}

/** The item (or run) to decide does not exist, or is not the caller's to see. HTTP 404. */
export class ParkedItemNotFoundError extends AgentStreamException {
  static status = 404
  static code = 'E_PARKED_NOT_FOUND'
  constructor() {
    super('No parked item or run matches')
  }
}

/**
 * Someone decided first (or the run was cancelled, or it is already resuming); or, `ambiguous`,
 * the decision names no park and several parks of the run used the item id. HTTP 409.
 */
export class DecisionConflictError extends AgentStreamException {
  static status = 409
  static code = 'E_DECISION_CONFLICT'
  constructor(why: 'decided' | 'ambiguous' = 'decided') {
    super(
      why === 'ambiguous'
        ? 'Several parks of this run used this item id: name the park'
        : 'This item was already decided'
    )
  }
}

/** The item's `expiresAt` has passed. HTTP 410. */
export class DecisionLapsedError extends AgentStreamException {
  static status = 410
  static code = 'E_DECISION_LAPSED'
  constructor() {
    super('This item expired before it was decided')
  }
}

/** The caller is not the item's approver. HTTP 403. */
export class DecisionForbiddenError extends AgentStreamException {
  static status = 403
  static code = 'E_DECISION_FORBIDDEN'
  constructor() {
    super('You may not decide this item')
  }
}

/** Answers sent to an approval, or a decision sent to a question set where that is not allowed. HTTP 422. */
export class DecisionMismatchError extends AgentStreamException {
  static status = 422
  static code = 'E_DECISION_MISMATCH'
  constructor(expected: 'a decision' | 'answers') {
    super(`This item takes ${expected}`)
  }
}

/** A decision or reply that breaks its rules (names the field and rule, never the value). HTTP 422. */
export class InvalidDecisionError extends AgentStreamException {
  static status = 422
  static code = 'E_INVALID_DECISION'
  readonly issues: ValidationIssue[]
  constructor(issues: ValidationIssue[]) {
    super(describeIssues('Invalid reply', issues))
    this.issues = issues
  }
}

/** The run to stop does not exist, or is not the caller's to see (another person's). HTTP 404. */
export class RunNotFoundError extends AgentStreamException {
  static status = 404
  static code = 'E_RUN_NOT_FOUND'
  constructor() {
    super('No run matches')
  }
}

/** The run to stop ended on its own (finished or failed): there is nothing to stop. HTTP 409. */
export class RunFinishedError extends AgentStreamException {
  static status = 409
  static code = 'E_RUN_FINISHED'
  constructor() {
    super('This run has ended: there is nothing to stop')
  }
}

/** A stop whose body breaks its rules (`mode`: `keep` or `rollback`; names the rule). HTTP 422. */
export class InvalidStopError extends AgentStreamException {
  static status = 422
  static code = 'E_INVALID_STOP'
  readonly issues: ValidationIssue[]
  constructor(issues: ValidationIssue[]) {
    super(describeIssues('Invalid stop', issues))
    this.issues = issues
  }
}

/** An AG-UI id that cannot be minted: over-long, a lone surrogate, a bad run id or ordinal. */
export class InvalidAgUiIdError extends AgentStreamException {
  static status = 400
  static code = 'E_INVALID_AGUI_ID'
  constructor(rule: string) {
    super(`Cannot mint an AG-UI id: ${rule}`)
  }
}

/**
 * A `RunAgentInput` body the AG-UI door refuses before the stream opens, naming the rule, never
 * the value: 400 `invalid_input` (see {@link AgUiBodyTooLargeError} for 413 `body_too_large`).
 */
export class InvalidAgUiInputError extends AgentStreamException {
  static status = 400
  static code = 'invalid_input'
  declare status: 400 | 413
  declare code: 'invalid_input' | 'body_too_large'
  constructor(message: string, options?: { status: 413; code: 'body_too_large' }) {
    super(message, options ?? { status: 400, code: 'invalid_input' })
  }
}

/** A request body over the cap (`agui.maxBodyBytes`, in bytes, as received by the transport). HTTP 413. */
export class AgUiBodyTooLargeError extends InvalidAgUiInputError {
  static status = 413
  static code = 'body_too_large'
  constructor(maxBodyBytes: number) {
    super(`The body exceeds ${maxBodyBytes} bytes`, { status: 413, code: 'body_too_large' })
  }
}

/**
 * This replica is shutting down (a graceful shutdown drains it): it starts no run and resumes
 * none; another replica will. HTTP 503 with `Retry-After`, code `replica_shutdown`.
 */
export class ReplicaShutdownError extends AgentStreamException {
  static status = 503
  static code = 'replica_shutdown'
  /** Seconds a client waits before it tries again (on another replica, behind a balancer). */
  static retryAfterSeconds = DEFAULTS.retryAfterSeconds
  constructor() {
    super('This server is shutting down: try again in a moment.')
  }

  async handle(error: this, ctx: ErrorContext) {
    ctx.response.header('Retry-After', String(ReplicaShutdownError.retryAfterSeconds))
    await super.handle(error, ctx)
  }
}

/**
 * An error of this package as the refusal it answers with: its status, code and message (the
 * JSON body is `{ code, message }`). The one mapping from an error to a refusal, on every route
 * of both transports and both doors.
 */
export function refusalOf(error: AgentStreamException): {
  status: number
  code: string
  message: string
} {
  return { status: error.status, code: String(error.code), message: error.message }
}

/** A door's refusal of a draining replica: 503 `replica_shutdown` (the transports add `Retry-After`). */
export function replicaShutdownRefusal() {
  return {
    kind: 'refused' as const,
    ...refusalOf(new ReplicaShutdownError()),
    status: 503 as const,
  }
}

/** Every error of this package, keyed by its code (as AdonisJS's own packages export theirs). */
export const errors = {
  E_INVALID_FRAME: InvalidFrameError,
  E_STREAM_CLOSED: StreamClosedError,
  E_STORE_UNAVAILABLE: StoreUnavailableError,
  E_CLOCK_SKEW: ClockSkewError,
  E_INVALID_CURSOR: InvalidCursorError,
  E_INVALID_RUN_ID: InvalidRunIdError,
  E_PARKED_NOT_FOUND: ParkedItemNotFoundError,
  E_DECISION_CONFLICT: DecisionConflictError,
  E_DECISION_LAPSED: DecisionLapsedError,
  E_DECISION_FORBIDDEN: DecisionForbiddenError,
  E_DECISION_MISMATCH: DecisionMismatchError,
  E_INVALID_DECISION: InvalidDecisionError,
  E_INVALID_AGUI_ID: InvalidAgUiIdError,
  E_RUN_NOT_FOUND: RunNotFoundError,
  E_RUN_FINISHED: RunFinishedError,
  E_INVALID_STOP: InvalidStopError,
  invalid_input: InvalidAgUiInputError,
  body_too_large: AgUiBodyTooLargeError,
  replica_shutdown: ReplicaShutdownError,
} as const

/** A code of this package's errors (the keys of {@link errors}). */
export type AgentStreamErrorCodeName = keyof typeof errors

/** Whether `code` names one of this package's errors. */
export function isPackageErrorCode(code: unknown): code is AgentStreamErrorCodeName {
  return typeof code === 'string' && Object.hasOwn(errors, code)
}

/**
 * A `webhooks` config the package refuses at boot (a URL that is not `http(s)://`, a secret
 * that is not `whsec_` and base64, an unknown event, a bound out of range): `code`
 * `invalid_webhook_config`, the message naming the field, never its value.
 */
export class InvalidWebhookConfigError extends AgentStreamException {
  static status = 500
  static code = 'invalid_webhook_config'
  constructor(field: string, rule: string) {
    super(`Invalid "webhooks" config: "${field}" ${rule}`)
  }
}
