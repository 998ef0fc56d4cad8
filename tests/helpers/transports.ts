import type { Database } from '@adonisjs/lucid/database'
import type { AgentRunner } from '../../src/runner/contract.js'
import type { RuntimeOptions } from '../../src/runtime.js'
import { createAgUiFetchHandler } from '../../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../../src/http/ui_message_fetch_handler.js'
import { serveRuntime } from './fetch_node.js'
import { serveApp } from './http.js'
import { resetTables } from './db.js'

/** The two transports every door is served by. */
export const TRANSPORTS = ['adonis', 'fetch'] as const
export type Transport = (typeof TRANSPORTS)[number]

/**
 * Both doors on fresh tables over loopback HTTP, through `transport`: the AdonisJS routes
 * (`serveApp`, the body parser and the package's provider) or the Fetch handlers on a bare
 * `node:http` server. The AG-UI door is at `${url}/agui`, the useChat door at `${url}/chat`;
 * `x-user` is the principal. `close` is registered with the test's cleanup by the caller.
 */
export async function serveDoors(
  transport: Transport,
  runner: AgentRunner,
  /** Options both transports take under the same keys (the config's and `createRuntime`'s). */
  options: Pick<RuntimeOptions, 'agui' | 'uiMessage' | 'maxQueuedRuns'> = {}
): Promise<{ url: string; db: Database; close: () => Promise<void> }> {
  if (transport === 'adonis') {
    const served = await serveApp({ runner, ...options })
    const db: Database = await served.app.container.make('lucid.db')
    await resetTables(db)
    return { url: served.url, db, close: async () => {} }
  }
  const served = await serveRuntime({ runner, ...options }, (runtime, principal) => {
    const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
    const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal })
    return (request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
  })
  return { url: served.url, db: served.db, close: served.close }
}
