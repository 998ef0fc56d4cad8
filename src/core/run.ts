/**
 * Who and what a run is: the principal it acts for and the ids that place it in a stream.
 * Shared by every layer (the bottom of the import graph).
 */

/** Who a run is for, or who decides: the host's user. Stored server-side, never served. */
export interface Principal {
  id: string
  roles?: string[]
}

/** What the package knows of a run that writes into a stream. */
export interface RunMeta {
  /** This run (a sub-agent's own id for a delegated run). */
  runId: string
  /** The top-level run whose stream the frames go into. */
  streamRunId: string
  threadId: string
  parentRunId: string | null
  principal: Principal | null
}
