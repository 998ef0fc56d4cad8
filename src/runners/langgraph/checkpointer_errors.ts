/**
 * A stored checkpoint, channel value or write that the saver's serde no longer reads (the
 * graph's state changed shape, the serde changed, the row was damaged). `LucidSaver` throws it
 * in place of the serde's own error (kept as `cause`, for the app's logs: never shown to a
 * reader), so a runner tells it apart and fails the run with a fixed sentence.
 */
export class CheckpointUnreadableError extends Error {
  readonly code = 'E_LANGGRAPH_CHECKPOINT_UNREADABLE'

  constructor(options?: { cause?: unknown }) {
    super('A stored LangGraph checkpoint could not be read', options)
    this.name = 'CheckpointUnreadableError'
  }
}
