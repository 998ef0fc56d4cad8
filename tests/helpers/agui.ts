import { EventSchema } from '@ag-ui/core/schemas'
import { enforceEvents, verifyEvents } from '@ag-ui/client'
import { from, lastValueFrom, toArray } from 'rxjs'

export type WireEvent = { type: string } & Record<string, any>

/** The events of an SSE body, with the `id:` each carried (checked for LF-only framing). */
export function parseSse(body: string): { event: WireEvent; id?: string }[] {
  if (body.includes('\r')) throw new Error('SSE must be framed with LF only')
  const out: { event: WireEvent; id?: string }[] = []
  for (const block of body.split('\n\n')) {
    let id: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
    }
    if (data.length > 0) out.push({ event: JSON.parse(data.join('\n')), ...(id ? { id } : {}) })
  }
  return out
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
 * after each event whether to end the response there (the socket is aborted, the client sees a
 * clean end, as after a network drop).
 */
export function recordingFetch(cut?: (event: WireEvent) => boolean) {
  const bodies: string[] = []
  let lastId: string | undefined
  let armed = Boolean(cut)
  const fetchFn = async (url: string, init: RequestInit) => {
    const abort = new AbortController()
    const response = await fetch(url, { ...init, signal: abort.signal })
    const index = bodies.push('') - 1
    if (!response.body) return response
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    let pending = ''
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read()
        if (done) return controller.close()
        pending += decoder.decode(value, { stream: true })
        const blocks = pending.split('\n\n')
        pending = blocks.pop()!
        let out = ''
        for (const block of blocks) {
          out += `${block}\n\n`
          const [parsed] = parseSse(`${block}\n\n`)
          if (parsed?.id) lastId = parsed.id
          if (parsed && armed && cut!(parsed.event)) {
            armed = false
            bodies[index] += out
            controller.enqueue(new TextEncoder().encode(out))
            abort.abort()
            controller.close()
            return
          }
        }
        bodies[index] += out
        if (out) controller.enqueue(new TextEncoder().encode(out))
      },
    })
    return new Response(body, { status: response.status, headers: response.headers })
  }
  return {
    fetch: fetchFn,
    bodies,
    get lastId() {
      return lastId
    },
    events(i = bodies.length - 1) {
      return parseSse(bodies[i]).map((e) => e.event)
    },
  }
}
