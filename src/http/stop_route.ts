import type { DoorBase } from '../door/deps.js'
import { notFound } from '../door/index.js'
import { AgentStreamException, refusalOf, RunNotFoundError } from '../errors.js'
import { ownedBy } from '../core/owner.js'
import { validateStop } from '../runner/stop_body.js'
import type { DoorAnswer, DoorRequest, DoorRoute } from './door_routes.js'

/**
 * A door's stop route (`POST`, JSON `{ mode? }` or no body): stops the run `target` names (a
 * thread's latest run, or a run by id) through run control, authorized as the chat's own person
 * (another person's thread or run is the 404 of a missing one). Answers 200
 * `{ status: 'cancelled' }` once the run ended, 202 `{ status: 'stopping' }` when its replica had
 * not ended it within the wait; refusals are `{ code, message }` (422 a bad body, 404, 409 a run
 * that ended on its own). The same route on both transports (one route table).
 */
export function stopRoute(
  door: DoorBase<unknown, unknown>,
  route: { path: string; name: string },
  target: (request: DoorRequest) => Promise<string | null>
): DoorRoute {
  return {
    method: 'POST',
    path: route.path,
    name: route.name,
    body: 'json',
    optionalBody: true,
    answer: async (request): Promise<DoorAnswer> => {
      try {
        const { mode } = await validateStop(request.body)
        const runId = await target(request)
        if (runId === null) return notFound()
        const outcome = await door.control.stop(
          runId,
          { principal: request.principal, via: 'chat' },
          mode
        )
        return {
          kind: 'json',
          status: outcome.status === 'stopping' ? 202 : 200,
          body: { status: outcome.status },
        }
      } catch (error) {
        // Missing, or another person's: the door's own 404, whichever it was.
        if (error instanceof RunNotFoundError) return notFound()
        if (!(error instanceof AgentStreamException)) throw error
        return { kind: 'refused', ...refusalOf(error) }
      }
    },
  }
}

/** A thread's latest run the caller owns, or `null` (none, or another person's thread). */
export async function latestRunOf(
  door: DoorBase<unknown, unknown>,
  request: DoorRequest,
  threadId: string
) {
  const latest = await door.runs.latest(threadId)
  if (!latest || !ownedBy(latest, request.principal)) return null
  return latest.runId
}
