import { test } from '@japa/runner'
import { symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FileSystem } from '@japa/file-system'
import Configure from '@adonisjs/core/commands/configure'
import { IgnitorFactory } from '@adonisjs/core/factories'
import type { ApplicationService } from '@adonisjs/core/types'
import { defineConfig as defineLucidConfig } from '@adonisjs/lucid'
import { MigrationRunner } from '@adonisjs/lucid/migration'
import { DEFAULT_TABLES } from '../src/store/schema.js'
import { DEFAULT_LANGGRAPH_TABLES } from '../src/store/langgraph_schema.js'
import { runId } from './helpers/sink.js'

/**
 * The package as `node ace configure` receives its name: the repository's entry file (the temp
 * app has no `node_modules/adonis-agent-stream` to resolve the name through).
 */
const PACKAGE_ENTRY = new URL('../index.ts', import.meta.url).href
/** `adonis-agent-stream/schema`, which the published migration imports. */
const SCHEMA_ENTRY = new URL('../src/schema/index.ts', import.meta.url).href
const MIGRATION = /^\d+_create_agent_stream_tables\.ts$/

/** A fresh app skeleton at `fs.basePath` (a temp folder), as the official packages' tests write. */
async function createSkeleton(fs: FileSystem) {
  await fs.create('.env', '')
  await fs.createJson('package.json', { name: 'configure-test-app', private: true, type: 'module' })
  await fs.createJson('tsconfig.json', {})
  await fs.create(
    'start/env.ts',
    `import { Env } from '@adonisjs/core/env'\n\nexport default await Env.create(new URL('../', import.meta.url), {})\n`
  )
  await fs.create(
    'adonisrc.ts',
    `import { defineConfig } from '@adonisjs/core/app'\n\nexport default defineConfig({})\n`
  )
}

/** A booted app rooted at the temp folder; terminated when the test ends. */
async function bootApp(
  fs: FileSystem,
  cleanup: (fn: () => Promise<void>) => void,
  merge: Parameters<IgnitorFactory['merge']>[0] = {}
): Promise<ApplicationService> {
  const ignitor = new IgnitorFactory()
    .withCoreProviders()
    .withCoreConfig()
    .merge(merge)
    .create(fs.baseUrl, {
      importer: (path) =>
        path.startsWith('./') || path.startsWith('../')
          ? import(new URL(path, fs.baseUrl).href)
          : import(path),
    })
  const app = ignitor.createApp('console')
  await app.init()
  await app.boot()
  cleanup(() => app.terminate())
  return app
}

async function runConfigure(app: ApplicationService, flags: string[] = []) {
  const ace = await app.container.make('ace')
  ace.ui.switchMode('raw')
  const command = await ace.create(Configure, [PACKAGE_ENTRY, ...flags])
  await command.exec()
  if (command.exitCode !== 0) {
    const logs = command.ui.logger.getLogs().map((log) => log.message)
    throw new Error(`configure failed:\n${logs.join('\n')}`, { cause: command.error })
  }
  return command
}

async function migrations(fs: FileSystem) {
  return (await fs.readDir('database/migrations')).map((file) => file.basename)
}

/**
 * Make the temp app resolve what the published files import, as an installed package would:
 * `adonis-agent-stream` is a package of one-line files re-exporting the repository's entries
 * (the root, and `/schema` for the migration), and `@adonisjs/*` links to the repository's
 * copies (the same module instances the test uses).
 */
async function installPackage(fs: FileSystem) {
  await fs.createJson('node_modules/adonis-agent-stream/package.json', {
    name: 'adonis-agent-stream',
    type: 'module',
    exports: { '.': './index.js', './schema': './schema.js' },
  })
  await fs.create(
    'node_modules/adonis-agent-stream/index.js',
    `export * from ${JSON.stringify(PACKAGE_ENTRY)}\n`
  )
  await fs.create(
    'node_modules/adonis-agent-stream/schema.js',
    `export * from ${JSON.stringify(SCHEMA_ENTRY)}\n`
  )
  await symlink(
    fileURLToPath(new URL('../node_modules/@adonisjs', import.meta.url)),
    join(fs.basePath, 'node_modules/@adonisjs'),
    'dir'
  )
}

test.group('node ace configure adonis-agent-stream', (group) => {
  group.each.setup(async ({ context }) => {
    await createSkeleton(context.fs)
  })

  test('publishes the config and one migration; registers the provider and the commands', async ({
    assert,
    fs,
    cleanup,
  }) => {
    const app = await bootApp(fs, cleanup)
    const command = await runConfigure(app)

    await assert.fileExists('config/agent_stream.ts')
    await assert.fileContains('config/agent_stream.ts', [
      `import { defineConfig } from 'adonis-agent-stream'`,
      `lease: '15s'`,
    ])
    const files = await migrations(fs)
    assert.lengthOf(files, 1)
    assert.match(files[0], MIGRATION)
    await assert.fileContains(`database/migrations/${files[0]}`, [
      `from 'adonis-agent-stream/schema'`,
      'createStreamTables(this.schema, this.db.dialect.name)',
      'dropStreamTables(this.schema)',
    ])
    await assert.fileContains('adonisrc.ts', [
      `() => import('adonis-agent-stream/agent_stream_provider')`,
      `() => import('adonis-agent-stream/commands')`,
    ])
    // No env validation is added: the package reads no environment variable.
    await assert.fileEquals(
      'start/env.ts',
      `import { Env } from '@adonisjs/core/env'\n\nexport default await Env.create(new URL('../', import.meta.url), {})\n`
    )
    const logs = command.ui.logger.getLogs().map((log) => log.message)
    assert.include(logs, 'green(DONE:)    create config/agent_stream.ts')
    assert.include(logs, `green(DONE:)    create database/migrations/${files[0]}`)
  })

  test('a second run publishes no second migration; --force overwrites the same file', async ({
    assert,
    fs,
    cleanup,
  }) => {
    const app = await bootApp(fs, cleanup)
    await runConfigure(app)
    const [first] = await migrations(fs)
    const adonisrc = await fs.contents('adonisrc.ts')

    const again = await runConfigure(app)
    assert.deepEqual(await migrations(fs), [first])
    // The rc file codemods are idempotent: nothing registered twice.
    assert.equal(await fs.contents('adonisrc.ts'), adonisrc)
    const logs = again.ui.logger.getLogs().map((log) => log.message)
    assert.isTrue(
      logs.some(
        (log) =>
          log.includes(`create database/migrations/${first}`) &&
          log.includes('already published (--force overwrites it)')
      ),
      logs.join('\n')
    )
    assert.isTrue(
      logs.some((log) => log.includes('SKIPPED:') && log.includes('create config/agent_stream.ts')),
      logs.join('\n')
    )

    // --force rewrites both files in place: the migration keeps its name (Lucid would otherwise
    // see a new migration and create the tables twice).
    await fs.create(`database/migrations/${first}`, '// edited by hand\n')
    await fs.create('config/agent_stream.ts', '// edited by hand\n')
    await runConfigure(app, ['--force'])
    assert.deepEqual(await migrations(fs), [first])
    await assert.fileContains(`database/migrations/${first}`, 'createStreamTables')
    await assert.fileContains('config/agent_stream.ts', 'defineConfig')
    assert.equal(await fs.contents('adonisrc.ts'), adonisrc)
  })

  test('the published config shows who decides: principal with roles, admin, approverPolicy, displayName; each example works uncommented', async ({
    assert,
    fs,
    cleanup,
  }) => {
    await runConfigure(await bootApp(fs, cleanup))
    await installPackage(fs)
    const published = await fs.contents('config/agent_stream.ts')
    for (const key of ['principal', 'admin', 'approverPolicy', 'displayName']) {
      assert.match(published, new RegExp(`^  // ${key}: `, 'm'), key)
    }
    assert.include(published, 'roles: user.role ? [user.role] : []')
    assert.include(published, 'defaultApproverPolicy(principal, item) ||')
    // Every example, uncommented, beside what it names (the model, the agent, the import).
    const uncommented = published
      .replace(/^( {2,})\/\/ /gm, '$1')
      .replace(
        `import { defineConfig } from 'adonis-agent-stream'`,
        [
          `import { defineConfig, defaultApproverPolicy } from 'adonis-agent-stream'`,
          `const User = { find: async (id) => ({ fullName: 'User ' + id }) }`,
          `class MyAgent { async start() { return { status: 'finished' } } async resume() { return { status: 'finished' } } }`,
        ].join('\n')
      )
    await fs.create('config/agent_stream_examples.ts', uncommented)
    const { default: provider } = await import(
      new URL('config/agent_stream_examples.ts', fs.baseUrl).href
    )
    // The limits example needs a container: this app has no limiter of its own (one in memory).
    const app = { container: { hasBinding: () => false, make: async () => ({ warn() {} }) } }
    const config = await provider.resolver(app)
    assert.exists(config.limits)
    const ctx = (user: object | null) => ({ auth: { user } }) as any
    const admin = await config.principal(ctx({ id: 7, role: 'admin' }))
    assert.deepEqual(admin, { id: '7', roles: ['admin'] })
    assert.deepEqual(await config.principal(ctx({ id: 8, role: null })), { id: '8', roles: [] })
    assert.isNull(await config.principal(ctx(null)))
    assert.isTrue(await config.admin(ctx({ id: 7, role: 'admin' })))
    assert.isFalse(await config.admin(ctx({ id: 8, role: null })))
    const item = {
      approver: 'requester',
      requester: { id: '9' },
      kind: 'approval' as const,
      runId: 'r',
    }
    assert.isTrue(await config.approverPolicy(admin, item))
    assert.isTrue(await config.approverPolicy({ id: '9', roles: [] }, item))
    assert.isFalse(await config.approverPolicy({ id: '8', roles: [] }, item))
    assert.equal(await config.displayName('7'), 'User 7')
  })

  test('the published migration creates the tables on SQLite; the published config boots the provider', async ({
    assert,
    fs,
    cleanup,
  }) => {
    await runConfigure(await bootApp(fs, cleanup))
    const [published] = await migrations(fs)
    await installPackage(fs)
    await fs.mkdir('tmp')

    // The published files themselves, unchanged, imported from the temp app.
    const { default: agentStreamConfig } = await import(
      new URL('config/agent_stream.ts', fs.baseUrl).href
    )
    const app = await bootApp(fs, cleanup, {
      config: {
        database: defineLucidConfig({
          connection: 'sqlite',
          connections: {
            sqlite: {
              client: 'better-sqlite3',
              connection: { filename: join(fs.basePath, 'tmp/db.sqlite3') },
              useNullAsDefault: true,
              migrations: { naturalSort: true },
            },
          },
        }),
        agent_stream: agentStreamConfig,
      },
      rcFileContents: {
        providers: [
          () => import('@adonisjs/lucid/database_provider'),
          () => import('../providers/agent_stream_provider.js'),
        ],
      },
    })
    const db = await app.container.make('lucid.db')

    const up = new MigrationRunner(db, app, { direction: 'up', connectionName: 'sqlite' })
    await up.run()
    if (up.error) throw up.error
    assert.deepEqual(Object.keys(up.migratedFiles), [
      `database/migrations/${published.replace(/\.ts$/, '')}`,
    ])
    for (const table of Object.values(DEFAULT_TABLES)) {
      assert.isTrue(await db.connection().schema.hasTable(table), table)
    }
    // The run's stored trace context (migration 0012's column), in the published migration too.
    assert.isTrue(await db.connection().schema.hasColumn('agent_streams', 'trace_context'))
    assert.sameMembers(Object.values(DEFAULT_TABLES), [
      'agent_streams',
      'agent_stream_frames',
      'agent_suspensions',
      'agent_approvals',
      'agent_elicitations',
      'agent_agui_runs',
      'agent_stream_checkpoints',
      'agent_threads',
      'agent_run_queue',
      'agent_mastra_snapshots',
      'agent_durable_streams',
      'agent_durable_producers',
      'agent_ds_subscriptions',
      'agent_ds_subscription_links',
      'agent_webhook_deliveries',
      'agent_purge_runs',
    ])
    // The LangGraph checkpointer's tables (`LucidSaver`), created by the same migration.
    assert.sameMembers(Object.values(DEFAULT_LANGGRAPH_TABLES), [
      'agent_langgraph_checkpoints',
      'agent_langgraph_blobs',
      'agent_langgraph_writes',
    ])
    for (const table of Object.values(DEFAULT_LANGGRAPH_TABLES)) {
      assert.isTrue(await db.connection().schema.hasTable(table), table)
    }

    // The provider works on those tables with the published config.
    const agentStream = await app.container.make('agentStream')
    assert.equal(agentStream.config.leaseMs, 15_000)
    const id = runId('configured')
    const writer = await agentStream.sink.open(id)
    await writer.write({ t: 'text', v: 'hello' })
    await writer.end()
    assert.equal((await agentStream.sink.head(id))?.status, 'ended')

    const down = new MigrationRunner(db, app, {
      direction: 'down',
      connectionName: 'sqlite',
      batch: 0,
    })
    await down.run()
    if (down.error) throw down.error
    for (const table of [
      ...Object.values(DEFAULT_TABLES),
      ...Object.values(DEFAULT_LANGGRAPH_TABLES),
    ]) {
      assert.isFalse(await db.connection().schema.hasTable(table), table)
    }
  })
})
