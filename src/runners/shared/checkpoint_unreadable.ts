import type { RunOutcome } from '../../runner/contract.js'

/**
 * A runner's checkpoint that no longer loads: another runner's, a shape this version does not
 * read, items it never asked, or a state its framework refuses (the agent changed since the
 * run parked). The run fails with `checkpoint_unreadable` and its fixed sentence, once.
 */
export class CheckpointUnreadable extends Error {
  constructor(reason = 'checkpoint unreadable', cause?: unknown) {
    super(reason, { cause })
  }
}

/**
 * The outcome of a resume whose checkpoint threw `error`: `checkpoint_unreadable` for a
 * {@link CheckpointUnreadable} (the app's `onError` told why, the framework's own error when it
 * gave one); anything else is rethrown (a fault of another kind).
 */
export function unreadableOutcome(error: unknown, onError?: (error: unknown) => void): RunOutcome {
  if (!(error instanceof CheckpointUnreadable)) throw error
  onError?.(error.cause ?? error)
  return { status: 'failed', code: 'checkpoint_unreadable' }
}
