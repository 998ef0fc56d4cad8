import {
  AgentStreamException,
  InvalidAgUiInputError,
  isPackageErrorCode,
  refusalOf,
  ReplicaShutdownError,
  replicaShutdownRefusal,
} from '../errors.js'
import type { RunDriver } from '../runner/driver.js'
import type { Refused } from './reply.js'

/**
 * Which errors a door answers as refusals: always a draining replica's (503
 * `replica_shutdown`) and a refused input's (400 `invalid_input`; 413 `body_too_large` when a
 * caller measured the body); with `packageErrors`, every other error of this package too, with
 * its status and code (the useChat door answers parking's decision errors so; the AG-UI door sends those as
 * `RUN_ERROR` itself and lets anything else through).
 */
export interface GuardRules {
  packageErrors?: boolean
}

/** The refusal `error` answers as under `rules`, or `null` for an error that is thrown on. */
export function refusalOfError(error: unknown, rules: GuardRules = {}): Refused | null {
  if (error instanceof ReplicaShutdownError) return replicaShutdownRefusal()
  if (!(error instanceof AgentStreamException) || error.code === undefined) return null
  const input = error instanceof InvalidAgUiInputError
  if (!input && !(rules.packageErrors && isPackageErrorCode(error.code))) return null
  return { kind: 'refused', ...refusalOf(error) }
}

/**
 * The input guard of every door's writing entry (a `POST` that starts or resumes a run): a
 * draining replica (a graceful shutdown) refuses it before anything is read (503
 * `replica_shutdown`: the client retries on another replica); errors thrown while it is
 * checked and started become refusals by {@link refusalOfError} (also a drain that began
 * while the request was checked).
 */
export async function guardInput<R>(
  driver: Pick<RunDriver, 'draining'>,
  act: () => Promise<R>,
  rules: GuardRules = {}
): Promise<R | Refused> {
  if (driver.draining) return replicaShutdownRefusal()
  try {
    return await act()
  } catch (error) {
    const refusal = refusalOfError(error, rules)
    if (refusal) return refusal
    throw error
  }
}
