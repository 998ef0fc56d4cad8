import { createDatabase, resetTables } from './db.js'
import { serveApp } from './http.js'
import type { DurableStreamsOptions } from '../../src/durable_streams/write/door.js'

/**
 * The package's AdonisJS app on fresh tables, served on loopback with its routes at the root:
 * the Durable Streams door at `<url>/ds` (`registerRoutes`). For the conformance suite's
 * `DS_TRANSPORT=adonis` run.
 */
export async function serveAdonis(durableStreams: DurableStreamsOptions) {
  const db = createDatabase()
  await resetTables(db)
  await db.manager.closeAll()
  const { app, agentStream, url, http } = await serveApp({ durableStreams })
  return {
    baseUrl: `${url}/ds`,
    close: async () => {
      agentStream.http.closeAll()
      http.closeAllConnections()
      await new Promise((resolve) => http.close(resolve))
      await app.terminate()
    },
  }
}
