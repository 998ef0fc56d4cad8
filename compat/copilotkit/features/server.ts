import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable, pipeline } from 'node:stream'
import { AppFactory } from '@adonisjs/core/factories/app'
import { EmitterFactory } from '@adonisjs/core/factories/events'
import { LoggerFactory } from '@adonisjs/core/factories/logger'
import { defineConfig } from '@adonisjs/lucid'
import { Database } from '@adonisjs/lucid/database'
import { MigrationRunner } from '@adonisjs/lucid/migration'
import { createAgUiFetchHandler, createRuntime } from '../../../index.ts'
import { FEATURES, featureAgents, type Feature } from './agents.ts'

/**
 * The AG-UI server of the feature suite, as an app outside AdonisJS builds it from the package's
 * public API: a Lucid `Database` on SQLite, migrated by Lucid's migrator with the package's own
 * migrations, one `createRuntime` per feature (each with its scripted agent, all on the one
 * database) and one `createAgUiFetchHandler` per feature under `/agui/<feature>`, on `node:http`.
 */

/** The repository is the app root: the migrator finds the package's `database/migrations`. */
const APP_ROOT = new URL('../../../', import.meta.url)

/** What each feature's door needs on top of the defaults. */
const DOOR_OPTIONS: Partial<Record<Feature, Record<string, unknown>>> = {
  // The page's tools reach the agent; a call to one ends the run for the page to answer.
  human_in_the_loop: { frontendTools: true },
  predictive_state_updates: { frontendTools: true, customEvents: ['PredictState'] },
}

function sqlite(filename: string) {
  return {
    client: 'better-sqlite3' as const,
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: any, done: (error: Error | null, conn: any) => void) => {
        conn.pragma('journal_mode = WAL')
        conn.pragma('busy_timeout = 10000')
        done(null, conn)
      },
    },
  }
}

/** Node's `http` in front of a Fetch handler (docs/agui.md, "The door outside AdonisJS"). */
function toNode(handle: (request: Request) => Promise<Response>) {
  return async (req: any, res: any) => {
    try {
      const controller = new AbortController()
      res.on('close', () => controller.abort())
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
      const response = await handle(
        new Request(`http://${req.headers.host}${req.url}`, {
          method: req.method,
          headers: req.headers as Record<string, string>,
          body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
          signal: controller.signal,
          ...(hasBody ? { duplex: 'half' } : {}),
        } as RequestInit)
      )
      res.writeHead(response.status, Object.fromEntries(response.headers))
      res.flushHeaders()
      if (!response.body) return void res.end()
      pipeline(Readable.fromWeb(response.body as any), res, () => {})
    } catch {
      if (res.headersSent) res.destroy()
      else
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end('{"code":"internal_error","message":"Internal error"}')
    }
  }
}

/** Start the server on a free loopback port, its database in `dbFile` (migrated first). */
export async function startFeatureServer(dbFile: string) {
  const app = new AppFactory().create(APP_ROOT)
  await app.init()
  const config = defineConfig({ connection: 'features', connections: { features: sqlite(dbFile) } })
  const db = new Database(config, new LoggerFactory().create(), new EmitterFactory().create(app))
  const migrator = new MigrationRunner(db, app, {
    direction: 'up',
    connectionName: 'features',
    disableLocks: true,
  })
  await migrator.run()
  if (migrator.error) throw migrator.error

  const agents = featureAgents()
  const runtimes = FEATURES.map((feature) =>
    createRuntime(db, { runner: agents[feature], agui: DOOR_OPTIONS[feature] as any })
  )
  const handlers = new Map(
    FEATURES.map((feature, i) => [
      feature,
      createAgUiFetchHandler(runtimes[i].door, { basePath: `/agui/${feature}` }),
    ])
  )
  const server: Server = createServer((req, res) => {
    const feature = /^\/agui\/([a-z_]+)/.exec(req.url ?? '')?.[1] as Feature | undefined
    const handle = feature && handlers.get(feature)
    if (!handle) return void res.writeHead(404).end()
    return toNode(handle)(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agui`
  return {
    /** `<url>/<feature>` is each feature's AG-UI route. */
    url,
    db,
    async stop() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      for (const runtime of runtimes) await runtime.close()
      await db.manager.closeAll()
    },
  }
}
