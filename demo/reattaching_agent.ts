import {
  HttpAgent,
  runHttpRequest,
  transformHttpEventStream,
  type AgentSubscriber,
  type HttpAgentConfig,
  type RunAgentInput,
  type RunAgentParameters,
  type RunAgentResult,
} from '@ag-ui/client'

/**
 * `HttpAgent` that does not take a dropped stream for the end of a run: a response that ends
 * without `RUN_FINISHED` or `RUN_ERROR` (a cut socket, a server shutting down, a proxy's
 * timeout) is followed by the thread's current run from the last SSE `id:` received, with
 * backoff, until one of those arrives. `maxAttempts` re-attaches in a row that bring no new
 * event give up (it throws); a refusal (4xx) is thrown at once.
 */
export class ReattachingAgent extends HttpAgent {
  /** The last SSE `id:` received: where a re-attach starts. */
  lastEventId?: string
  maxAttempts = 8
  backoffMs = 250
  #ended = false
  #responded = false

  constructor(config: HttpAgentConfig) {
    super(config)
    const send = this.fetch
    this.fetch = async (url, init) => this.#watch(await send(url, init))
  }

  runAgent(parameters?: RunAgentParameters, subscriber?: AgentSubscriber) {
    this.lastEventId = undefined // a new run: cursors of the previous stream mean nothing
    return this.#untilEnded(() => super.runAgent(parameters, subscriber), parameters, subscriber)
  }

  connectAgent(parameters?: RunAgentParameters, subscriber?: AgentSubscriber) {
    return this.#untilEnded(
      () => super.connectAgent(parameters, subscriber),
      parameters,
      subscriber
    )
  }

  protected connect(input: RunAgentInput) {
    const after = this.lastEventId ? `?after=${encodeURIComponent(this.lastEventId)}` : ''
    return transformHttpEventStream(
      runHttpRequest(() =>
        this.fetch(`${this.url}/threads/${encodeURIComponent(input.threadId)}${after}`, {
          headers: { ...this.headers, Accept: 'text/event-stream' },
          signal: this.abortController.signal,
        })
      )
    )
  }

  async #untilEnded(
    attach: () => Promise<RunAgentResult>,
    parameters?: RunAgentParameters,
    subscriber?: AgentSubscriber
  ): Promise<RunAgentResult> {
    const known = new Set(this.messages.map((message) => message.id))
    let result: RunAgentResult | undefined
    for (let attempt = 0, idle = 0; ; attempt++) {
      const seen = this.lastEventId
      this.#ended = this.#responded = false
      try {
        result = await attach()
      } catch (error) {
        // Refused, or the first request got no stream: not a drop.
        const status = (error as { status?: number }).status ?? 0
        if ((attempt === 0 && !this.#responded) || (status >= 400 && status < 500)) throw error
      }
      if (this.#ended || this.abortController.signal.aborted) break
      idle = this.lastEventId === seen ? idle + 1 : 1
      if (idle > this.maxAttempts) throw new Error('The stream was lost: re-attaching failed')
      const delay = Math.min(this.backoffMs * 2 ** (idle - 1), 20 * this.backoffMs)
      await new Promise((resolve) => setTimeout(resolve, delay))
      attach = () => super.connectAgent({ resume: parameters?.resume }, subscriber)
    }
    const newMessages = this.messages.filter((message) => !known.has(message.id))
    return { result: result?.result, newMessages }
  }

  /** The body as it comes, noting each event's SSE id and whether the run's end came. */
  #watch(response: Response) {
    if (!response.ok || !response.body) return response
    this.#responded = true
    const decoder = new TextDecoder()
    let pending = ''
    const watched = new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        pending += decoder.decode(chunk, { stream: true })
        const blocks = pending.split('\n\n')
        pending = blocks.pop()!
        for (const block of blocks) {
          const id = /^id: ?(.*)$/m.exec(block)?.[1]
          const data = /^data: ?(.*)$/m.exec(block)?.[1]
          if (id) this.lastEventId = id
          if (data && /^RUN_(FINISHED|ERROR)$/.test(JSON.parse(data).type)) this.#ended = true
        }
        controller.enqueue(chunk)
      },
    })
    return new Response(response.body.pipeThrough(watched), response)
  }
}
