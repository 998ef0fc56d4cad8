import { EMPTY, type Observable, ReplaySubject, defer, mergeMap } from 'rxjs'
import { runHttpRequest, transformHttpEventStream } from '@ag-ui/client'

/**
 * An AG-UI event as this runner passes it on: `@ag-ui/client`'s `BaseEvent`, whichever version
 * the app's CopilotKit brings (typed `any` so the runner fits its `AgentRunner` as it is).
 */
export type AgUiEventLike = any

/**
 * The agent CopilotKit hands to `run()` (an `@ag-ui/client` `AbstractAgent`: the `HttpAgent`
 * of the runtime's `agents`, pointed at the package's `/agui` route). Typed by what is used, so
 * any `@ag-ui/client` version fits.
 */
export interface RunnerAgent {
  runAgent(
    parameters: any,
    subscriber: { onEvent: (params: { event: any }) => void }
  ): Promise<unknown>
  abortRun(): void
  /** `HttpAgent`'s `fetch` (its requests go through it): read through for a stopped run. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>
}

/** `AgentRunner.run()`'s request in `@copilotkit/runtime` 1.75 (`AgentRunnerRunRequest`). */
export interface RunnerRunRequest {
  threadId: string
  agent: RunnerAgent
  input: { runId: string; threadId: string } & Record<string, any>
}

/** `AgentRunner.connect()`'s request (`AgentRunnerConnectRequest`). */
export interface RunnerConnectRequest {
  threadId: string
  agentId?: string
  /** What the runtime forwards: the agent's headers and the browser's forwardable ones. */
  headers?: Record<string, string>
}

/** Options of {@link AgentStreamRunner}. */
export interface AgentStreamRunnerOptions {
  /**
   * The package's AG-UI route, absolute (`http://127.0.0.1:3333/agent/agui`), or one per
   * CopilotKit agent id. `connect()` reads `<url>/threads/:threadId` from it.
   */
  url: string | ((agentId: string | undefined) => string)
  /** Headers sent on every re-attach, over the ones CopilotKit forwards. */
  headers?: Record<string, string>
  /** The `fetch` re-attaches use. Default: the global one. */
  fetch?: typeof fetch
  /**
   * The `@ag-ui/client` version the runner declares on every request it makes or reads through
   * (`X-AG-UI-Client-Version`): the package's door serves what that client parses. Default
   * `'0.0.57'`, what CopilotKit 1.61 runs on (1.75 runs on 0.0.59): a stopped run ends with a
   * plain `RUN_FINISHED`, as CopilotKit's own runner ends one, and a pending frontend tool
   * call's `RUN_FINISHED` has no `pendingToolCallIds`. An agent's own header wins.
   */
  clientVersion?: string
}

/** The header the package's AG-UI door reads a client's version from (`src/agui/compat/`). */
const CLIENT_VERSION_HEADER = 'x-ag-ui-client-version'

/**
 * `headers` as a plain object (names lower-cased) with `version` declared, unless they declare
 * one already.
 */
function declaring(headers: RequestInit['headers'], version: string): Record<string, string> {
  return { [CLIENT_VERSION_HEADER]: version, ...Object.fromEntries(new Headers(headers)) }
}

const TERMINAL = new Set(['RUN_FINISHED', 'RUN_ERROR'])

/**
 * A CopilotKit `AgentRunner` (`@copilotkit/runtime` 1.75: `run`, `connect`, `isRunning`,
 * `stop`) that keeps nothing in memory: the package's store is the thread's memory. Pass it as
 * `new CopilotRuntime({ agents, runner: new AgentStreamRunner({ url }) })`.
 *
 * - `run()` drives the run through the agent CopilotKit hands it (your `HttpAgent` on the
 *   package's `POST /agui`) and passes its events on.
 * - `connect()` (CopilotKit restoring or re-joining a thread) re-attaches to the thread's
 *   current run from the package's store (`GET <url>/threads/:threadId`): a runtime restarted
 *   since, another replica's run, a run an admin decision continued all show; 404 (no such
 *   thread, or another principal's) is an empty thread.
 * - `isRunning()` is whether this process has a `run()` of the thread in flight; `stop()` stops
 *   that run through the package's stop route (`<url>/threads/:threadId/stop`, as the person of
 *   the run's request), on whichever replica runs it.
 * - Every request declares the AG-UI client CopilotKit runs on (`clientVersion`, default
 *   `0.0.57`; `X-AG-UI-Client-Version`), and the door serves what it parses: a stopped run (this
 *   `stop()`, another tab's, the admin console's) ends, in what `run()` and `connect()` pass
 *   on, with a plain `RUN_FINISHED`, as CopilotKit's own runner ends one (that client refuses
 *   AG-UI 1.0's `cancelled` outcome). The package's store keeps `cancelled`.
 *
 * Typed structurally: CopilotKit is not a dependency of the package (`rxjs` and
 * `@ag-ui/client`, which CopilotKit's runtime brings, are optional peers).
 */
export class AgentStreamRunner {
  readonly #options: AgentStreamRunnerOptions
  readonly #running = new Map<string, { runId: string; agent: RunnerAgent }>()

  constructor(options: AgentStreamRunnerOptions) {
    this.#options = options
  }

  get #version() {
    return this.#options.clientVersion ?? '0.0.57'
  }

  /**
   * Run `request.input` through `request.agent`; the events as they come (replayed to a late
   * subscriber). A second run of a thread while one is in flight here throws, as CopilotKit's
   * own runner does. The agent's `fetch` (`HttpAgent`'s) declares `clientVersion`. A run that
   * ends without `RUN_FINISHED` / `RUN_ERROR` (the request aborted or failed) ends with a
   * `RUN_ERROR`.
   */
  run(request: RunnerRunRequest): Observable<AgUiEventLike> {
    if (this.#running.has(request.threadId)) throw new Error('Thread already running')
    const entry = { runId: request.input.runId, agent: request.agent }
    this.#running.set(request.threadId, entry)
    const events = new ReplaySubject<AgUiEventLike>(Infinity)
    // The door serves what CopilotKit's client parses (a stopped run: a plain RUN_FINISHED).
    const send = request.agent.fetch
    const version = this.#version
    if (typeof send === 'function') {
      request.agent.fetch = (url, init) =>
        send.call(request.agent, url, { ...init, headers: declaring(init?.headers, version) })
    }
    let ended = false
    const finish = (error?: unknown) => {
      if (this.#running.get(request.threadId) === entry) this.#running.delete(request.threadId)
      if (!ended) {
        events.next({
          type: 'RUN_ERROR',
          message: error instanceof Error ? error.message : 'The run stopped.',
        })
      }
      events.complete()
    }
    request.agent
      .runAgent(request.input, {
        onEvent: ({ event }) => {
          if (TERMINAL.has(event.type)) ended = true
          events.next(event)
        },
      })
      .then(
        () => finish(),
        (error) => finish(error)
      )
    return events.asObservable()
  }

  /**
   * The thread's current run from the package's store, from its `RUN_STARTED` (after a
   * `MESSAGES_SNAPSHOT` of the thread before it) to its end, live while it runs. Empty when
   * the package has no such thread for this principal (404).
   *
   * @throws (as an observable error) on any other refusal, or a network failure.
   */
  connect(request: RunnerConnectRequest): Observable<AgUiEventLike> {
    const { url, headers, fetch: send = fetch } = this.#options
    const base = typeof url === 'function' ? url(request.agentId) : url
    const target = `${base.replace(/\/$/, '')}/threads/${encodeURIComponent(request.threadId)}`
    return defer(() =>
      send(target, {
        method: 'GET',
        headers: declaring(
          { ...request.headers, ...headers, accept: 'text/event-stream' },
          this.#version
        ),
      })
    ).pipe(
      mergeMap((response): Observable<AgUiEventLike> => {
        if (response.status === 404) return EMPTY
        return transformHttpEventStream(runHttpRequest(() => Promise.resolve(response))) as any
      })
    )
  }

  /** Whether this process has a `run()` of the thread in flight. */
  async isRunning(request: { threadId: string }): Promise<boolean> {
    return this.#running.has(request.threadId)
  }

  /**
   * Stop the thread's run that this process drives (only `runId`'s, when given), as its person:
   * `POST <agent url>/threads/:threadId/stop` with the agent's headers (the package's run
   * control: the agent stops on whichever replica runs it, and the run ends `cancelled` for
   * every reader, a plain `RUN_FINISHED` on this request). Where that route refuses or cannot
   * be reached, only this process's request is aborted (the run goes on in the package). Returns
   * whether there was one.
   */
  async stop(request: { threadId: string; runId?: string }): Promise<boolean> {
    const entry = this.#running.get(request.threadId)
    if (!entry || (request.runId !== undefined && request.runId !== entry.runId)) return false
    const agent = entry.agent as RunnerAgent & { url?: unknown; headers?: Record<string, string> }
    const send = this.#options.fetch ?? fetch
    if (typeof agent.url === 'string') {
      const target = `${agent.url.replace(/\/$/, '')}/threads/${encodeURIComponent(request.threadId)}/stop`
      try {
        const response = await send(target, {
          method: 'POST',
          headers: {
            ...agent.headers,
            ...this.#options.headers,
            'content-type': 'application/json',
          },
          body: '{}',
        })
        await response.body?.cancel()
        if (response.ok) return true
      } catch {
        // Not reachable: the request is aborted below.
      }
    }
    entry.agent.abortRun()
    return true
  }
}
