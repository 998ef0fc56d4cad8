/** One event of an SSE body, with the `id:` it carried. */
export interface SseEvent {
  event: { type: string } & Record<string, any>
  id?: string
}

/** The events of an SSE body (blocks split on a blank line; `id:` and `data:` lines). */
export function parseSse(body: string): SseEvent[] {
  const out: SseEvent[] = []
  for (const block of body.split('\n\n')) {
    let id: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = line.slice(3).trim()
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
    }
    if (data.length > 0) out.push({ event: JSON.parse(data.join('\n')), ...(id ? { id } : {}) })
  }
  return out
}

/**
 * A `fetch` for `HttpAgent` that keeps every response body and can simulate a network drop:
 * arm `cutWhen` and the response ends right after the first event it accepts (the socket is
 * aborted, the client sees the body end without `RUN_FINISHED`). `lastId` is the last SSE `id:`
 * the client received, the cursor to re-attach from.
 */
export function cuttingFetch() {
  const bodies: string[] = []
  /** The URL of each request, in order. */
  const urls: string[] = []
  const state = {
    lastId: undefined as string | undefined,
    /**
     * Cut the next response after the first event this accepts; disarmed once it fires (unless
     * it set another one, the next cut).
     */
    cutWhen: null as ((event: SseEvent['event']) => boolean) | null,
  }
  const fetchFn = async (url: string | URL, init: RequestInit = {}) => {
    const abort = new AbortController()
    urls.push(String(url))
    const response = await fetch(url, { ...init, signal: abort.signal })
    const index = bodies.push('') - 1
    if (!response.body) return response
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    const encoder = new TextEncoder()
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
          if (parsed?.id) state.lastId = parsed.id
          const cutWhen = state.cutWhen
          if (parsed && cutWhen?.(parsed.event)) {
            // Disarmed, unless the predicate armed another cut.
            if (state.cutWhen === cutWhen) state.cutWhen = null
            bodies[index] += out
            controller.enqueue(encoder.encode(out))
            abort.abort()
            controller.close()
            return
          }
        }
        bodies[index] += out
        if (out) controller.enqueue(encoder.encode(out))
      },
      cancel() {
        abort.abort()
      },
    })
    return new Response(body, { status: response.status, headers: response.headers })
  }
  return {
    fetch: fetchFn,
    state,
    bodies,
    urls,
    /** The events of response `i` (default: the last one). */
    events(i = bodies.length - 1) {
      return parseSse(bodies[i] ?? '').map((e) => e.event)
    },
  }
}
