import { EventSchema } from '@ag-ui/core/schemas'
import { enforceEvents, verifyEvents } from '@ag-ui/client'
import { from, lastValueFrom, toArray } from 'rxjs'
import { cuttingFetch, parseSse as parseSseBody } from '../../demo/cutting_fetch.js'

export { ReattachingAgent } from '../../demo/reattaching_agent.js'

export type WireEvent = { type: string } & Record<string, any>

/** The events of an SSE body, with the `id:` each carried (checked for LF-only framing). */
export function parseSse(body: string): { event: WireEvent; id?: string }[] {
  if (body.includes('\r')) throw new Error('SSE must be framed with LF only')
  return parseSseBody(body)
}

/**
 * The official checks on one stream: every event passes `EventSchema`, `enforceEvents` strips
 * nothing (zero warnings), and `verifyEvents` accepts the sequence.
 */
export async function assertConforms(assert: any, events: WireEvent[]) {
  for (const event of events) {
    const parsed = EventSchema.safeParse(event)
    assert.isTrue(parsed.success, `${event.type}: ${parsed.success ? '' : parsed.error.message}`)
  }
  const warnings: unknown[] = []
  const warn = console.warn
  console.warn = (...args: unknown[]) => warnings.push(args)
  try {
    const enforced = await lastValueFrom(from(events as any[]).pipe(enforceEvents(), toArray()))
    assert.lengthOf(enforced, events.length)
  } finally {
    console.warn = warn
  }
  assert.deepEqual(warnings, [], 'enforceEvents warned')
  const verified = await lastValueFrom(from(events as any[]).pipe(verifyEvents(), toArray()))
  assert.lengthOf(verified, events.length)
}

/**
 * A `fetch` for `HttpAgent` that records every response body and can cut one: `cut` is asked
 * after each event whether to end the response there (the demo's `cuttingFetch`, armed once).
 */
export function recordingFetch(cut?: (event: WireEvent) => boolean) {
  const recorder = cuttingFetch()
  recorder.state.cutWhen = cut ?? null
  return {
    fetch: recorder.fetch,
    bodies: recorder.bodies,
    urls: recorder.urls,
    get lastId() {
      return recorder.state.lastId
    },
    events: recorder.events,
  }
}
