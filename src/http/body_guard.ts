import type { HttpContext } from '@adonisjs/core/http'
import type { NextFn } from '@adonisjs/core/types/http'
import { TOO_DEEP_BODY, tooDeep } from '../core/json_depth.js'
import { mediaTypeRefusal } from './media_type.js'
import { routeOf } from './package_routes.js'
import { bodyTooLarge, refusalBody, sendRefusal } from './refusal.js'

/**
 * The package's router middleware (the provider registers it in `boot`, before the app's
 * `start/kernel.ts` adds the bodyparser, so it runs first). On the package's body routes only:
 *
 * - a JSON route whose body is not JSON answers 415 `unsupported_media_type` before the
 *   bodyparser reads a byte (the door controller checks the same rule again, `media_type.ts`);
 * - a door's JSON route whose declared `Content-Length` passes its cap answers 413
 *   `body_too_large`, nothing read (the door controller measures the bytes the bodyparser
 *   read, `ctx.request.raw()`, for a body sent without a length);
 * - a parsed body nested deeper than `MAX_JSON_DEPTH` is kept as `TOO_DEEP_BODY` instead, so
 *   AdonisJS's `Request.setInitialBody`, which deep-clones the body recursively, never walks it
 *   (a body nested a thousand levels otherwise exhausts the stack there: a 500 before any route
 *   code runs); the route's own validator then refuses it, naming the `maxDepth` rule.
 *
 * Any other route passes untouched.
 */
export default class AgentStreamBodyGuard {
  handle(ctx: HttpContext, next: NextFn) {
    const kind = routeOf(ctx)?.body
    if (!kind) return next()
    if (kind === 'json') {
      const refused = mediaTypeRefusal(ctx.request.header('content-type'))
      if (refused) {
        return ctx.response.status(refused.status).json(refusalBody(refused))
      }
    }
    const { maxBodyBytes } = routeOf(ctx)!
    const declared = Number(ctx.request.header('content-length') ?? Number.NaN)
    if (maxBodyBytes !== undefined && declared > maxBodyBytes) {
      return sendRefusal(ctx.response, bodyTooLarge(maxBodyBytes))
    }
    const request = ctx.request
    const setInitialBody = request.setInitialBody.bind(request)
    request.setInitialBody = (body) => setInitialBody(tooDeep(body) ? TOO_DEEP_BODY : body)
    return next()
  }
}
