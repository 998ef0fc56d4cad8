import type { Router } from '@adonisjs/core/http'
import type { RouteGroup } from '@adonisjs/core/http'
import type { RunControl } from '../runner/run_control.js'
import type { Parking } from '../parking/parking.js'
import type { UiMessageDoor } from '../ui_message/door/index.js'
import type { AdonisDoorAdapter } from './adonis_adapter.js'
import { agUiRouteTable } from './agui_routes.js'
import { uiMessageRouteTable } from './ui_message_routes.js'
import { durableDialectRouteTable } from './durable_dialect_routes.js'
import { durableChatRouteTable } from './durable_chat_routes.js'
import { durableStreamsDoor, durableStreamsRouteTable } from './durable_streams_routes.js'
import { AdminController } from './admin/admin_controller.js'
import { RunsController } from './admin/runs_controller.js'
import { WebhooksController } from './admin/webhooks_controller.js'
import type { Webhooks } from '../telemetry/webhooks/index.js'
import { claimRoute, packageRoute, type Handler } from './package_routes.js'
import { DecisionsController } from './decisions_controller.js'
import { StreamController, type StreamRoutesDeps } from './stream_controller.js'
import { ThreadList } from '../store/thread_list.js'
import { sinkInternals } from '../sink/lucid_sink.js'

/** What the routes serve: the package's service (`AgentStream`) as the transport sees it. */
export interface RoutedAgentStream extends StreamRoutesDeps {
  parking: Parking
  /** Run control: the cancel route stops a talking run too. */
  control: RunControl
  /** The useChat door (`door` is the AG-UI one). */
  uiMessage: UiMessageDoor
  /** The AdonisJS adapter that serves both doors' route tables. */
  http: AdonisDoorAdapter
  /** Aborted when the replica shuts down (`AgentStream.closing`): the admin's SSE ends. */
  closing?: AbortSignal
  /** The webhook outbox (the console's dead letters); none: webhooks off. */
  webhooks?: Webhooks | null
}

/** Options of {@link registerRoutes} and `agentStream.registerRoutes`: the prefix, the names. */
export interface RoutesOptions {
  /** Where the routes live. Default `/agent-stream`. */
  prefix?: string
  /** Route names start with this. Default `agentStream`. */
  as?: string
}

/**
 * Mount the package's routes in one group, each named `<as>.<name>`:
 *
 * | method | path | name |
 * | --- | --- | --- |
 * | POST | `/agui` | `agui.run` (AG-UI `RunAgentInput` in, SSE out) |
 * | GET | `/agui/runs/:runId` | `agui.reattach` (`Last-Event-ID` or `?after=`) |
 * | GET | `/agui/threads` | `agui.threads` (the caller's threads, newest first: `?limit=&cursor=`) |
 * | GET | `/agui/threads/:threadId` | `agui.attach` (the thread's current run, same cursors) |
 * | GET | `/chat` | `chat.list` (the caller's chats, newest first: `?limit=&cursor=`) |
 * | POST | `/chat` | `chat.send` (`useChat`'s body in, the AI SDK UI message stream out) |
 * | GET | `/chat/:chatId/stream` | `chat.resume` (the chat's active turn; 204 when none) |
 * | GET | `/chat/:chatId/messages` | `chat.messages` (the chat's stored `UIMessage[]`, JSON) |
 * | GET, HEAD, PUT, POST, DELETE, OPTIONS | `/ds/v1/stream/*` | `ds.stream.*` (Durable Streams: read, head, create, append, delete, preflight) |
 * | POST | `/runs` | `runs.start` (native: `{ message, threadId?, runId? }`) |
 * | GET | `/runs/:runId/stream` | `runs.stream` (native SSE frames, `?after=`/`Last-Event-ID`) |
 * | GET, HEAD | `/ds/runs/:runId/frames\|agui\|ui-message` | `ds.runs.*` (the run as a Durable Stream, `durable_dialect_routes.ts`) |
 * | GET, HEAD | `/ds/threads/:threadId/frames\|agui\|ui-message` | `ds.threads.*` (the thread's turns as one) |
 * | POST, GET | `/ds/chat`, `/ds/chat/:chatId/stream` | `ds.chat.*` (the AI SDK transport, `durable_chat_routes.ts`) |
 * | POST | `/runs/:runId/cancel` | `runs.cancel` |
 * | POST | `/items/:runId/:itemId/approve\|reject\|answer` | `items.approve` ... |
 * | GET | `/admin`, `/admin/history` | `admin.page`, `admin.history` (queue, decided items) |
 * | GET | `/admin/items`, `/admin/items/:runId/:itemId` | `admin.items` (live part), `admin.item` |
 * | GET | `/admin/events` | `admin.events` (SSE: the queue changed) |
 * | GET | `/admin/runs`, `/admin/runs/:runId` | `admin.runs`, `admin.run` (runs by status, a run's timeline) |
 * | POST | `/admin/items/:runId/:itemId/:action` | `admin.decide` |
 * | POST | `/admin/runs/:runId/stop` | `admin.stop` (the run view's Stop button: a form, `mode`) |
 *
 * The two doors' routes (`agui.*`, `chat.*`) are their route tables (`agui_routes.ts`,
 * `ui_message_routes.ts`), served by the one AdonisJS adapter (`adonis_adapter.ts`) with the
 * config's `principal`, `agui.heartbeat` and `agui.abortOnDisconnect` for both doors, the doors'
 * `maxBodyBytes` on the bytes received (413 `body_too_large`).
 *
 * The JSON routes (every POST but the admin form) take `application/json` only (415
 * `unsupported_media_type` otherwise, `media_type.ts`), read by the package itself, not the
 * app's bodyparser (`body_guard.ts`, `body_reader.ts`: the Fetch handlers' reader; 413
 * `body_too_large` past `DEFAULTS.maxBodyBytes`, a door's own `maxBodyBytes` on its routes; 400
 * for a body that is not UTF-8 JSON; a decision's or cancel's may be empty); every body is nested at most
 * `MAX_JSON_DEPTH` levels (`src/core/json_depth.ts`; the provider's body guard keeps AdonisJS from
 * deep-cloning a deeper one). `modifier` gets the group, to attach the app's middleware
 * (`group.use(middleware.auth())`). Each route is marked with who reads it
 * (`package_routes.ts`): on the JSON and SSE ones (all but the admin's HTML views and its form)
 * the app's auth and CSRF refusals answer 401 / 403 JSON (`host_refusals.ts`).
 */
export function registerRoutes(
  router: Router,
  agentStream: RoutedAgentStream,
  options: RoutesOptions = {},
  modifier?: (group: RouteGroup) => void
) {
  const prefix = `/${(options.prefix ?? '/agent-stream').replace(/^\/+|\/+$/g, '')}`.replace(
    /^\/$/,
    ''
  )
  const as = options.as ?? 'agentStream'
  const config = agentStream.config
  const stream = new StreamController(agentStream, {
    principal: config.principal,
    heartbeatMs: config.agui.heartbeatMs,
    limits: config.limits,
  })
  const decisions = new DecisionsController(agentStream.parking, agentStream.control, {
    principal: config.principal,
    admin: config.admin,
    limits: config.limits,
  })
  const sink = agentStream.sink
  const admin = new AdminController(agentStream.parking, {
    base: prefix,
    authorize: config.admin,
    principal: config.principal,
    displayName: config.displayName,
    rules: config.agui,
    replay: (runId, range) => sink.replay(runId, range),
    observe: (listener) => sinkInternals(sink).tail.observe(listener),
    pollMs: sink.options.pollIntervalMs,
    closing: agentStream.closing,
  })
  const runs = new RunsController(agentStream.sink, agentStream.parking, agentStream.control, {
    base: prefix,
    authorize: config.admin,
    principal: config.principal,
    displayName: config.displayName,
    rules: config.agui,
  })
  const hooks = new WebhooksController(() => agentStream.webhooks ?? null, {
    base: prefix,
    authorize: config.admin,
  })
  const threads = new ThreadList(() => sinkInternals(sink).client, sink.tables)
  const group = router
    .group(() => {
      /** A JSON route (a JSON body in; JSON or SSE out). */
      const json = (handler: Handler) => packageRoute({ body: 'json', client: 'json' }, handler)
      /** A JSON route whose body may be left out (a decision, a cancel: none reads as `{}`). */
      const decide = (handler: Handler) =>
        packageRoute({ body: 'json', client: 'json', optionalBody: true }, handler)
      /** A GET read by `fetch`, `EventSource`, `HttpAgent` or `useChat` (JSON or SSE out). */
      const read = (handler: Handler) => packageRoute({ client: 'json' }, handler)
      /** A GET of the admin console a browser navigates to (HTML out). */
      const page = (handler: Handler) => packageRoute({ client: 'page' }, handler)
      // The doors' route tables, through the one AdonisJS adapter (`adonis_adapter.ts`).
      agentStream.http.mount(router, '/agui', agUiRouteTable(agentStream.door, threads))
      agentStream.http.mount(router, '', uiMessageRouteTable(agentStream.uiMessage, threads))
      // Every run's and thread's stream as a Durable Stream, and the AI SDK transport on it.
      const dialects = {
        agui: agentStream.door,
        uiMessage: agentStream.uiMessage,
        rules: config.agui,
      }
      agentStream.http.mount(
        router,
        '/ds',
        durableDialectRouteTable(dialects, config.durableStreams)
      )
      agentStream.http.mount(router, '/ds', durableChatRouteTable(dialects))
      agentStream.http.mount(
        router,
        '/ds',
        durableStreamsRouteTable(
          durableStreamsDoor(sink, config.durableStreams, agentStream.closing)
        )
      )
      router
        .post(
          '/runs',
          json((ctx) => stream.start(ctx))
        )
        .as('runs.start')
      router
        .get(
          '/runs/:runId/stream',
          read((ctx) => stream.stream(ctx))
        )
        .as('runs.stream')
      router
        .post(
          '/runs/:runId/cancel',
          decide((ctx) => decisions.cancel(ctx))
        )
        .as('runs.cancel')
      router
        .post(
          '/items/:runId/:itemId/approve',
          decide((ctx) => decisions.approve(ctx))
        )
        .as('items.approve')
      router
        .post(
          '/items/:runId/:itemId/reject',
          decide((ctx) => decisions.reject(ctx))
        )
        .as('items.reject')
      router
        .post(
          '/items/:runId/:itemId/answer',
          decide((ctx) => decisions.answer(ctx))
        )
        .as('items.answer')
      router
        .get(
          '/admin',
          page((ctx) => admin.page(ctx))
        )
        .as('admin.page')
      router
        .get(
          '/admin/items',
          read((ctx) => admin.items(ctx))
        )
        .as('admin.items')
      router
        .get(
          '/admin/items/:runId/:itemId',
          page((ctx) => admin.item(ctx))
        )
        .as('admin.item')
      router
        .get(
          '/admin/history',
          page((ctx) => admin.history(ctx))
        )
        .as('admin.history')
      router
        .get(
          '/admin/events',
          read((ctx) => admin.events(ctx))
        )
        .as('admin.events')
      router
        .get(
          '/admin/runs',
          page((ctx) => runs.list(ctx))
        )
        .as('admin.runs')
      router
        .get(
          '/admin/runs/:runId',
          page((ctx) => runs.show(ctx))
        )
        .as('admin.run')
      router
        .post(
          '/admin/items/:runId/:itemId/:action',
          packageRoute(
            { body: 'form', client: 'page', csrfRefused: (ctx) => admin.csrfRefused(ctx) },
            (ctx) => admin.decide(ctx)
          )
        )
        .as('admin.decide')
      router
        .post(
          '/admin/runs/:runId/stop',
          packageRoute(
            { body: 'form', client: 'page', csrfRefused: (ctx) => admin.csrfRefused(ctx) },
            (ctx) => runs.stop(ctx)
          )
        )
        .as('admin.stop')
      router
        .get(
          '/admin/webhooks',
          page((ctx) => hooks.page(ctx))
        )
        .as('admin.webhooks')
      router
        .post(
          '/admin/webhooks/:id/retry',
          packageRoute(
            { body: 'form', client: 'page', csrfRefused: (ctx) => hooks.csrfRefused(ctx) },
            (ctx) => hooks.retry(ctx)
          )
        )
        .as('admin.webhooks.retry')
    })
    .as(as)
  // A route defined above without its kind is a JSON one (its refusals are JSON).
  for (const route of group.routes) {
    if ('toJSON' in route && !('routes' in route)) claimRoute(route.toJSON().handler)
  }
  if (prefix) group.prefix(prefix)
  modifier?.(group)
  return group
}
