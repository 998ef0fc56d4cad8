import type { HttpContext } from '@adonisjs/core/http'
import { AgentStreamException, isPackageErrorCode, refusalOf } from '../errors.js'
import { refusalBody, sendRefusal } from './refusal.js'
import { admit, type RequestLimits } from './limits.js'
import type { Parking } from '../parking/parking.js'
import { resolvePrincipal, type AdminAuthorizer, type PrincipalResolver } from './principal.js'
import type { Decider } from '../parking/policy.js'
import type { RunControl } from '../runner/run_control.js'
import { validateStop } from '../runner/stop_body.js'

/**
 * The decision routes (JSON): approve, reject, answer a parked item, cancel a parked run. Each
 * takes `application/json` only (415 `unsupported_media_type` otherwise, also for cancel: a
 * cross-site form decides nothing), read by the body guard (`body_guard.ts`: the one reader of
 * every route, 413 / 400 as JSON; an empty body is `{}`). Parking's decisions validate every body (VineJS, the depth
 * rule, no unknown field); its typed errors answer as `{ code, message }` with their status: 403
 * not yours to decide (to whoever may see the item: the run's own principal, or a request the
 * app's `admin` hook allows), 404 no such item (also another person's item the policy does not
 * let you decide: the same answer as a missing one), 409 decided or resuming already, 410
 * lapsed, 422 a body that does not fit the item.
 */
export class DecisionsController {
  constructor(
    readonly parking: Parking,
    readonly control: RunControl,
    readonly options: {
      principal?: PrincipalResolver
      admin?: AdminAuthorizer
      limits?: RequestLimits
    } = {}
  ) {}

  approve(ctx: HttpContext) {
    return this.#decide(ctx, (decider) =>
      this.parking.decisions.approve(
        ctx.params.runId,
        ctx.params.itemId,
        decider,
        ctx.request.body()
      )
    )
  }

  reject(ctx: HttpContext) {
    return this.#decide(ctx, (decider) =>
      this.parking.decisions.reject(
        ctx.params.runId,
        ctx.params.itemId,
        decider,
        ctx.request.body()
      )
    )
  }

  answer(ctx: HttpContext) {
    return this.#decide(ctx, (decider) =>
      this.parking.decisions.answer(
        ctx.params.runId,
        ctx.params.itemId,
        decider,
        ctx.request.body()
      )
    )
  }

  /**
   * Cancel (stop) a run, talking or parked: `{ mode? }` (`keep` or `rollback`), or no body.
   * 200 `{ status: 'cancelled' }` once it ended, 202 `{ status: 'stopping' }` when its replica
   * had not ended it within the wait (see `RunControl.stop`).
   */
  cancel(ctx: HttpContext) {
    return this.#decide(ctx, async (decider) => {
      const { mode } = await validateStop(ctx.request.body())
      const outcome = await this.control.stop(ctx.params.runId, decider, mode)
      if (outcome.status === 'stopping') ctx.response.status(202)
      return { status: outcome.status }
    })
  }

  async #decide(ctx: HttpContext, action: (decider: Decider) => Promise<{ status: string }>) {
    // The body was read by the body guard (`body_guard.ts`: 415, 413, 400 answered there).
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const limited = await admit(this.options.limits, principal, { decision: true })
    if ('refused' in limited) return sendRefusal(ctx.response, limited.refused)
    try {
      const admin = this.options.admin ? await this.options.admin(ctx) : false
      return ctx.response.json(await action({ principal, via: 'api', admin }))
    } catch (error) {
      const answer = asHttpError(error)
      if (!answer) throw error
      return ctx.response.status(answer.status).json(refusalBody(answer))
    }
  }
}

/**
 * A package error as an HTTP answer (its status, code and message), or `null` for anything else.
 * Chosen by code (the keys of `errors`), never by HTTP status.
 */
export function asHttpError(error: unknown) {
  if (!(error instanceof AgentStreamException) || !isPackageErrorCode(error.code)) return null
  return refusalOf(error)
}
