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
