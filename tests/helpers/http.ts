import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getActiveTest } from '@japa/runner'
import type { ConnectionConfig } from '@adonisjs/lucid/types/database'
import type { AgentStreamConfig } from '../../src/define_config.js'
import type { AgentStream } from '../../src/agent_stream.js'
import { setupApp } from './app.js'
import { within } from './bounded.js'

/**
 * A real AdonisJS app served over loopback HTTP: the body parser, the package's provider and its
 * routes at the root (`registerRoutes({ prefix: '/' })`). Who a request is for comes from its
 * `x-user` header, `x-roles` (comma-separated) its roles, and `x-admin: yes` opens the admin page
 * (tests only).
 */
export async function serveApp(
  config: AgentStreamConfig = {},
  modifier?: Parameters<AgentStream['registerRoutes']>[1],
  options: {
    connection?: ConnectionConfig
    /** More providers and config files (`setupApp`'s `extend`). */
    extend?: { providers: (() => Promise<any>)[]; config: Record<string, unknown> }
  } = {}
) {
  const app = await setupApp(
    {
      principal: (ctx) => {
        const id = ctx.request.header('x-user')
        const roles = ctx.request.header('x-roles')
        return id ? { id, ...(roles ? { roles: roles.split(',') } : {}) } : null
      },
      admin: (ctx) => ctx.request.header('x-admin') === 'yes',
      ...config,
    },
    { environment: 'web', connection: options.connection, extend: options.extend }
  )
  const agentStream: AgentStream = await app.container.make('agentStream')
  const router = await app.container.make('router')
  const server = await app.container.make('server')
  router.use([() => import('@adonisjs/core/bodyparser_middleware')])
  agentStream.registerRoutes({ prefix: '/' }, modifier)
  await server.boot()
  const http = createServer(server.handle.bind(server))
  server.setNodeServer(http)
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  getActiveTest()?.cleanup(async () => {
    agentStream.http.closeAll()
    http.closeAllConnections()
    await new Promise((resolve) => http.close(resolve))
    await within(
      agentStream.driver.settled(),
      30_000,
      'the runs this test started did not settle after it ended (a runner still waiting?)'
    )
  })
  return { app, agentStream, url, http }
}

/** POST `body` as JSON, as `user` (the `x-user` principal of {@link serveApp}). */
export function postJson(url: string, body: unknown, user = 'alice') {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': user },
    body: JSON.stringify(body),
  })
}

/** A response read whole: its status, text, JSON (`null` when the body is not JSON), headers. */
export async function readResponse(response: Response) {
  const text = await response.text()
  let json: any = null
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: response.status, text, json, headers: response.headers }
}

/**
 * Read a streaming response until `pick(text so far)` finds what it looks for; that, the body
 * then cancelled (a live stream would go on). Throws when the body ends first.
 */
export async function readUntil<T>(response: Response, pick: (text: string) => T | undefined) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error('the stream ended before what was awaited')
    text += decoder.decode(value, { stream: true })
    const found = pick(text)
    if (found !== undefined) {
      void reader.cancel().catch(() => {})
      return found
    }
  }
}

/**
 * A client of the routes under `base`: `request(method, path, body?, user?)` sends `body` as JSON
 * as `user` (the `x-user` principal of {@link serveApp}) and reads the answer whole.
 */
export function jsonClient(base: string) {
  return async (method: string, path: string, body?: unknown, user = 'alice') =>
    readResponse(
      await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-user': user },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    )
}

/** A `RunAgentInput` with one user message. */
export const runInput = (threadId: string, runId: string, extra: Record<string, unknown> = {}) => ({
  threadId,
  runId,
  messages: [{ id: 'u', role: 'user', content: 'go' }],
  ...extra,
})
