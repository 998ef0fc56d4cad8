import type { HttpContext } from '@adonisjs/core/http'
import type { NextFn } from '@adonisjs/core/types/http'
import { TOO_DEEP_BODY, tooDeep } from '../core/json_depth.js'
import { DEFAULTS } from '../defaults.js'
import { readBytesBody, readJsonBody } from './body_reader.js'
import { keepBodyBytes, routeOf } from './package_routes.js'
import { sendRefusal } from './refusal.js'

/**
 * The package's router middleware (the provider registers it in `boot`, before the app's
 * `start/kernel.ts` adds the bodyparser, so it runs first). On the package's body routes only:
 *
 * - a JSON route's body is read here, by the one reader of both transports (`body_reader.ts`:
 *   415 `unsupported_media_type`, 413 `body_too_large` above the route's cap, 400
 *   `body_incomplete` for a body cut off mid-way, 400 `invalid_input` for one that is not UTF-8
 *   JSON, all `{ code, message }`), and becomes the request's body as parsed, nothing converted;
 *   the app's bodyparser, next, then finds no body left to read (`hasBody()` is false for this
 *   request), so its conversions (`""` to `null`, trimming) and its plain-text refusals never
 *   apply: the AdonisJS routes see the very JSON the Fetch handlers see;
 * - a body nested deeper than `MAX_JSON_DEPTH` is kept as `TOO_DEEP_BODY` instead (also the
 *   admin form's, parsed by the bodyparser), so AdonisJS's `Request.setInitialBody`, which
 *   deep-clones the body recursively, never walks it (a body nested a thousand levels otherwise
 *   exhausts the stack there: a 500 before any route code runs); the route's own validator then
 *   refuses it, naming the `maxDepth` rule.
 *
 * - a raw route's body (`'bytes'`, any content type) is read here up to the route's cap (413
 *   `body_too_large`, 400 `body_incomplete`) and kept for the route (`bodyBytes`); the
 *   bodyparser then finds none.
 *
 * Any other route passes untouched.
 */
export default class AgentStreamBodyGuard {
  async handle(ctx: HttpContext, next: NextFn) {
    const route = routeOf(ctx)
    if (!route?.body) return next()
    const request = ctx.request
    const setInitialBody = request.setInitialBody.bind(request)
    const initialBody = (body: unknown) =>
      setInitialBody((tooDeep(body) ? TOO_DEEP_BODY : body) as Record<string, unknown>)
    if (route.body === 'form') {
      request.setInitialBody = initialBody
      return next()
    }
    if (route.body === 'bytes') {
      const raw = await readBytesBody(
        { contentLength: request.header('content-length'), bytes: request.request },
        route.maxBodyBytes ?? DEFAULTS.maxBodyBytes
      )
      if ('refused' in raw) return sendRefusal(ctx.response, raw.refused)
      keepBodyBytes(ctx, raw.bytes)
      request.hasBody = () => false
      return next()
    }
    const read = await readJsonBody(
      {
        contentType: request.header('content-type'),
        contentLength: request.header('content-length'),
        bytes: request.request,
      },
      { maxBytes: route.maxBodyBytes ?? DEFAULTS.maxBodyBytes, optional: route.optionalBody }
    )
    if ('refused' in read) return sendRefusal(ctx.response, read.refused)
    initialBody(read.value === undefined ? {} : read.value)
    request.updateRawBody(read.text)
    request.hasBody = () => false
    return next()
  }
}
