import { Exception } from '@adonisjs/core/exceptions'

/**
 * A frame the SPI does not allow: unknown `t`, a wrong field type, text that is not well-formed
 * Unicode, or a serialized size over `maxFrameBytes`. Thrown by `SinkWriter.write` before anything
 * is stored. The message names the field and the rule, never the value.
 */
export class InvalidFrameError extends Exception {
  static status = 422
  static code = 'E_INVALID_FRAME'

  /** Each broken rule: the field path (`event.kind`) and the rule's name (`string`, `maxBytes`). */
  readonly issues: { field: string; rule: string }[]

  constructor(issues: { field: string; rule: string }[]) {
    super(
      `Invalid stream frame: ${issues.map((issue) => `${issue.field || '(frame)'} fails "${issue.rule}"`).join('; ')}`
    )
    this.issues = issues
  }
}

/**
 * The stream no longer takes frames: it was ended, failed (its writer's lease lapsed) or purged.
 * Reopen it with `sink.open(runId)` to continue.
 */
export class StreamClosedError extends Exception {
  static status = 409
  static code = 'E_STREAM_CLOSED'
  constructor(runId: string) {
    super(`The stream of run "${runId}" is not open for writing`)
  }
}

/** A cursor string that this package did not mint (see `src/sink/cursor.ts` for the grammar). */
export class InvalidCursorError extends Exception {
  static status = 400
  static code = 'E_INVALID_CURSOR'
  constructor() {
    super('Invalid stream cursor: expected "<seq>" or "<seq>.<offset>" with non-negative integers')
  }
}

/** A run id outside the accepted shape (1 to 191 characters of `[A-Za-z0-9_:.-]`). */
export class InvalidRunIdError extends Exception {
  static status = 400
  static code = 'E_INVALID_RUN_ID'
  constructor() {
    super('Invalid run id: expected 1 to 191 characters of letters, digits, "_", "-", ":" or "."')
  }
}

/** The item (or run) to decide does not exist, or is not the caller's to see. HTTP 404. */
export class ParkedItemNotFoundError extends Exception {
  static status = 404
  static code = 'E_PARKED_NOT_FOUND'
  constructor() {
    super('No parked item or run matches')
  }
}

/** Someone decided first (or the run was cancelled, or it is already resuming). HTTP 409. */
export class DecisionConflictError extends Exception {
  static status = 409
  static code = 'E_DECISION_CONFLICT'
  constructor() {
    super('This item was already decided')
  }
}

/** The item's `expiresAt` has passed. HTTP 410. */
export class DecisionLapsedError extends Exception {
  static status = 410
  static code = 'E_DECISION_LAPSED'
  constructor() {
    super('This item expired before it was decided')
  }
}

/** The caller is not the item's approver. HTTP 403. */
export class DecisionForbiddenError extends Exception {
  static status = 403
  static code = 'E_DECISION_FORBIDDEN'
  constructor() {
    super('You may not decide this item')
  }
}

/** Answers sent to an approval, or a decision sent to a question set where that is not allowed. HTTP 422. */
export class DecisionMismatchError extends Exception {
  static status = 422
  static code = 'E_DECISION_MISMATCH'
  constructor(expected: 'a decision' | 'answers') {
    super(`This item takes ${expected}`)
  }
}

/** A decision or reply that breaks its rules (names the field and rule, never the value). HTTP 422. */
export class InvalidDecisionError extends Exception {
  static status = 422
  static code = 'E_INVALID_DECISION'
  readonly issues: { field: string; rule: string }[]
  constructor(issues: { field: string; rule: string }[]) {
    super(
      `Invalid reply: ${issues.map((i) => `${i.field || '(body)'} fails "${i.rule}"`).join('; ')}`
    )
    this.issues = issues
  }
}
