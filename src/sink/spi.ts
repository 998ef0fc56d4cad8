import type { StreamFrame } from '../core/frames.js'

/**
 * Where an agent writes one run's frames.
 *
 * Writes keep their order. A writer may hold text back to coalesce it; `flush()` writes out what
 * is held, `end()` writes it and marks the stream finished.
 */
export interface SinkWriter {
  write(frame: StreamFrame): void | Promise<void>
  /** Mark the run's stream finished: no more frames. */
  end(): void | Promise<void>
  /** Write out anything held back, without ending the stream. */
  flush?(): void | Promise<void>
}

/**
 * The data plane: writers keyed by run id, subscribers that replay what is stored and then
 * follow live frames until the end (`docs/sink.md`).
 */
export interface TokenStreamSink {
  /** Open, or reopen, the writer for a run. A reopened stream continues its sequence. */
  open(runId: string): SinkWriter | Promise<SinkWriter>
  /** Replay stored frames for the run, then yield live ones until `end()`. */
  subscribe(runId: string): AsyncIterable<StreamFrame>
  /** Drop everything held for the run. */
  close(runId: string): void | Promise<void>
  /** Whether the sink holds anything for the run (the re-attach route answers 404 when not). */
  has?(runId: string): boolean | Promise<boolean>
}

/**
 * Wrap a writer so a DELEGATED run forwards its frames into its top-level ancestor's stream
 * without ever ending it: the ancestor owns that stream. `end()` only flushes what the child
 * wrote, so nothing of the child's is held back when the parent, perhaps on another replica,
 * writes next.
 */
export function childSinkWriter(inner: SinkWriter): SinkWriter {
  const flush = async () => {
    await inner.flush?.()
  }
  return {
    write: (frame) => inner.write(frame),
    flush,
    end: async () => {
      await flush()
      // A writer that holds a lease (this package's) lets go of it: a finished child must not
      // keep its parent's stream alive after the parent's process died.
      ;(inner as { release?: () => void }).release?.()
    },
  }
}
