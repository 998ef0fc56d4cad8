import type { HttpContext } from '@adonisjs/core/http'
import { requestCursor } from '../core/cursor.js'

/** The cursor a re-attach request names (`?after=` or `Last-Event-ID`; see `requestCursor`). */
export function cursorOf(ctx: HttpContext): string | undefined {
  return requestCursor(ctx.request.qs().after, ctx.request.header('last-event-id'))
}
