/**
 * A stopped run as CopilotKit knows it. The package's AG-UI door ends a stopped run with AG-UI
 * 1.0's `RUN_FINISHED { outcome: { type: 'cancelled' } }`; the AG-UI client CopilotKit 1.75 runs
 * on (`@ag-ui/client` 0.0.x, in its runtime and in the browser) knows two outcomes, `success` and
 * `interrupt`, and refuses the event (a `ZodError`: the run ends in a `RUN_ERROR`, a restored
 * thread loses its end). CopilotKit's own runner ends a stopped run with a plain `RUN_FINISHED`,
 * and so does this: the package's stream (its SSE, `data:` lines of one JSON event each, as its
 * writer sends them) with that outcome left out. What is stored stays `cancelled`.
 */

const BLOCK_END = '\n\n'

/** One SSE event block, its `cancelled` outcome left out. Anything else as it came. */
function rewriteBlock(block: string): string {
  if (!block.includes('RUN_FINISHED') || !block.includes('cancelled')) return block
  const lines = block.split('\n')
  const data = lines.filter((line) => line.startsWith('data:'))
  let event: any
  try {
    event = JSON.parse(data.map((line) => line.slice(5).replace(/^ /, '')).join('\n'))
  } catch {
    return block
  }
  if (event?.type !== 'RUN_FINISHED' || event.outcome?.type !== 'cancelled') return block
  const finished = { ...event }
  delete finished.outcome
  return [...lines.filter((line) => !line.startsWith('data:')), `data: ${JSON.stringify(finished)}`]
    .filter((line) => line !== '')
    .join('\n')
}

/**
 * `response` with each `RUN_FINISHED` whose outcome is `cancelled` sent as a plain
 * `RUN_FINISHED`; any response that is not an event stream as it is.
 */
export function withoutCancelledOutcome(response: Response): Response {
  const type = response.headers.get('content-type') ?? ''
  if (!response.ok || !response.body || !type.includes('text/event-stream')) return response
  let pending = ''
  const blocks = new TransformStream<string, string>({
    transform(chunk, controller) {
      pending += chunk
      let end = pending.indexOf(BLOCK_END)
      while (end !== -1) {
        controller.enqueue(rewriteBlock(pending.slice(0, end)) + BLOCK_END)
        pending = pending.slice(end + BLOCK_END.length)
        end = pending.indexOf(BLOCK_END)
      }
    },
    flush(controller) {
      if (pending) controller.enqueue(rewriteBlock(pending))
    },
  })
  const body = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(blocks)
    .pipeThrough(new TextEncoderStream())
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}
