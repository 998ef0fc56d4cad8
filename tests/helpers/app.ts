import { getActiveTest } from '@japa/runner'
import { IgnitorFactory } from '@adonisjs/core/factories'
import { defineConfig as defineLucidConfig } from '@adonisjs/lucid'
import type { ApplicationService } from '@adonisjs/core/types'
import { defineConfig, type AgentStreamConfig } from '../../src/define_config.js'
import type { ConnectionConfig } from '@adonisjs/lucid/types/database'
import { connectionConfig } from './db.js'

/** The repository is the app root: Lucid finds the package's own `database/migrations`. */
const APP_ROOT = new URL('../../', import.meta.url)

/**
 * A real AdonisJS app with Lucid and this package's provider, booted (not started). `redis`:
 * also `@adonisjs/redis` (its provider, and this config as `config/redis.ts`). `extend`: more
 * providers (before the package's) and config files (`{ session: ..., auth: ... }`).
 */
export async function setupApp(
  config: AgentStreamConfig = {},
  {
    environment = 'console',
    mode = 'run' as 'run' | 'warmup',
    connection = connectionConfig() as ConnectionConfig,
    redis = undefined as { connection: string; connections: Record<string, object> } | undefined,
    extend = { providers: [], config: {} } as {
      providers: (() => Promise<any>)[]
      config: Record<string, unknown>
    },
  } = {}
): Promise<ApplicationService> {
  const ignitor = new IgnitorFactory()
    .withCoreProviders()
    .withCoreConfig()
    .merge({
      config: {
        database: defineLucidConfig({
          connection: 'main',
          connections: { main: { ...connection, migrations: { naturalSort: true } } },
        }),
        agent_stream: defineConfig(config),
        ...(redis ? { redis } : {}),
        ...extend.config,
      },
      rcFileContents: {
        providers: [
          () => import('@adonisjs/lucid/database_provider'),
          ...(redis ? [() => import('@adonisjs/redis/redis_provider')] : []),
          ...extend.providers,
          () => import('../../providers/agent_stream_provider.js'),
        ],
      },
    })
    .create(APP_ROOT, {
      importer: (path) =>
        path.startsWith('./') || path.startsWith('../')
          ? import(new URL(path, APP_ROOT).href)
          : import(path),
    })
  const app = ignitor.createApp(environment as any)
  app.setMode(mode)
  await app.init()
  await app.boot()
  getActiveTest()?.cleanup(() => app.terminate())
  return app
}
