import { readdirSync } from 'node:fs'
import { test } from '@japa/runner'
import { MigrationRunner } from '@adonisjs/lucid/migration'
import AgentStreamPurge from '../commands/purge.js'
import { defineConfig } from '../src/define_config.js'
import { setupApp } from './helpers/app.js'
import { collect, runId, textOf } from './helpers/sink.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { DEFAULT_TABLES } from '../src/store/schema.js'
import { DEFAULT_LANGGRAPH_TABLES } from '../src/store/langgraph_schema.js'

async function migrate(app: any, direction: 'up' | 'down') {
  const db = await app.container.make('lucid.db')
  const runner = new MigrationRunner(db, app, {
    direction,
    connectionName: 'main',
    // Lucid takes PostgreSQL's advisory lock on one pooled connection and may release it on
    // another while the package's own queries keep the pool busy; the tests never migrate twice.
    disableLocks: true,
    ...(direction === 'down' ? { batch: 0 } : {}),
  })
  await runner.run()
  if (runner.error) throw runner.error
  return runner
}

test.group('In an AdonisJS app', (group) => {
  group.each.setup(async () => {
    // A clean database: no package tables, no migration bookkeeping.
    const app = await setupApp()
    const db = await app.container.make('lucid.db')
    // Every package table (dependents first), then the migrations' bookkeeping.
    for (const table of [
      ...Object.values(DEFAULT_LANGGRAPH_TABLES).reverse(),
      ...Object.values(DEFAULT_TABLES).reverse(),
      'adonis_schema',
      'adonis_schema_versions',
    ]) {
      await db.connection().schema.dropTableIfExists(table)
    }
  })

  test('the package migration creates the tables through Lucid; rollback drops them', async ({
    assert,
  }) => {
    const app = await setupApp()
    const runner = await migrate(app, 'up')
    // Every migration the package ships ran (the tables, the queue's indexes, the checkpoints).
    const shipped = readdirSync(new URL('../database/migrations/', import.meta.url))
    assert.lengthOf(Object.keys(runner.migratedFiles), shipped.length)
    const db = await app.container.make('lucid.db')
    assert.isTrue(await db.connection().schema.hasTable('agent_streams'))
    assert.isTrue(await db.connection().schema.hasTable('agent_stream_frames'))
    assert.isTrue(await db.connection().schema.hasTable('agent_stream_checkpoints'))
    assert.isTrue(await db.connection().schema.hasTable('agent_run_queue'))
    for (const table of Object.values(DEFAULT_LANGGRAPH_TABLES)) {
      assert.isTrue(await db.connection().schema.hasTable(table), table)
    }

    const agentStream = await app.container.make('agentStream')
    const id = runId()
    const writer = await agentStream.sink.open(id)
    await writer.write({ t: 'text', v: 'through the provider' })
    await writer.end()
    assert.equal(textOf(await collect(agentStream.sink.subscribe(id))), 'through the provider')

    await migrate(app, 'down')
    assert.isFalse(await db.connection().schema.hasTable('agent_streams'))
    assert.isFalse(await db.connection().schema.hasTable('agent_stream_checkpoints'))
    assert.isFalse(await db.connection().schema.hasTable('agent_run_queue'))
    for (const table of Object.values(DEFAULT_LANGGRAPH_TABLES)) {
      assert.isFalse(await db.connection().schema.hasTable(table), table)
    }
  })

  test('agent-stream:purge deletes streams past the TTL (and --dry-run deletes nothing)', async ({
    assert,
  }) => {
    const app = await setupApp({ ttl: '1h' })
    await migrate(app, 'up')
    const agentStream = await app.container.make('agentStream')
    const db = await app.container.make('lucid.db')
    const old = runId('old')
    const writer = await agentStream.sink.open(old)
    await writer.end()
    await db
      .connection()
      .from('agent_streams')
      .where('run_id', old)
      .update({ ended_at: Date.now() - 2 * 3600_000 })

    const ace = await app.container.make('ace')
    ace.ui.switchMode('raw')
    const dry = await ace.create(AgentStreamPurge, ['--dry-run'])
    await dry.exec()
    dry.assertSucceeded()
    dry.assertLog('[ blue(info) ] 1 ended stream(s) would be deleted')
    assert.isTrue(await agentStream.sink.has(old))

    const bad = await ace.create(AgentStreamPurge, ['--older-than', 'soon'])
    await bad.exec()
    bad.assertFailed()
    assert.isTrue(await agentStream.sink.has(old))

    const purge = await ace.create(AgentStreamPurge, [])
    await purge.exec()
    purge.assertSucceeded()
    purge.assertLog('[ green(success) ] Deleted 1 ended stream(s)')
    assert.isFalse(await agentStream.sink.has(old))
    await migrate(app, 'down')
  })

  test('warmup opens no connection and no timer', async ({ assert }) => {
    const app = await setupApp({}, { mode: 'warmup' })
    const agentStream = await app.container.make('agentStream')
    const db = await app.container.make('lucid.db')
    assert.isFalse(db.manager.isConnected('main'))
    assert.isFalse(sinkInternals(agentStream.sink).tail.running)
  })

  test('the sweeper starts on ready and stops on shutdown; a run with the configured runner parks', async ({
    assert,
  }) => {
    const { scriptedAgent } = await import('../src/testing/scripted_agent.js')
    const app = await setupApp(
      { runner: scriptedAgent({ steps: ['approval'] }), sweepInterval: '50ms' },
      { environment: 'web' }
    )
    await migrate(app, 'up')
    const agentStream = await app.container.make('agentStream')
    assert.isFalse(agentStream.sweeping)
    await app.start(() => {})
    assert.isTrue(agentStream.sweeping)
    const id = runId()
    const { done } = await agentStream.driver.start({ runId: id, principal: { id: 'u1' } })
    assert.equal((await done).status, 'parked')
    const [item] = await agentStream.parking.queries.list({ runId: id })
    assert.equal(item.toolName, 'send_email')
    await agentStream.shutdown()
    assert.isFalse(agentStream.sweeping)
    await migrate(app, 'down')
  })

  test('an ace command (console) starts no sweeper and no webhook deliverer: a cron purge resumes nothing', async ({
    assert,
  }) => {
    const app = await setupApp({
      sweepInterval: '50ms',
      webhooks: {
        endpoints: [
          {
            url: 'http://127.0.0.1:9/hooks',
            secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
          },
        ],
      },
    })
    await migrate(app, 'up')
    const agentStream = await app.container.make('agentStream')
    await app.start(() => {})
    assert.isFalse(agentStream.sweeping)
    assert.isFalse(agentStream.webhooks!.deliverer.running)
    await agentStream.shutdown()
    await migrate(app, 'down')
  })

  test('a runner factory in the config is called once with the booted app; its runner runs', async ({
    assert,
  }) => {
    const { scriptedAgent } = await import('../src/testing/scripted_agent.js')
    const seen: unknown[] = []
    const app = await setupApp({
      runner: async (booted) => {
        // What a factory is for: the app's services (here the database) exist by now.
        seen.push(await booted.container.make('lucid.db'))
        return scriptedAgent({ steps: ['approval'] })
      },
    })
    await migrate(app, 'up')
    const agentStream = await app.container.make('agentStream')
    await app.container.make('agentStream')
    assert.lengthOf(seen, 1)
    assert.strictEqual(seen[0], await app.container.make('lucid.db'))
    const id = runId()
    const { done } = await agentStream.driver.start({ runId: id, principal: { id: 'u1' } })
    assert.equal((await done).status, 'parked')
    await agentStream.shutdown()
    await migrate(app, 'down')
  })

  test('what the published stubs import from the package, the package exports', async ({
    assert,
  }) => {
    const { readFile } = await import('node:fs/promises')
    const entries: Record<string, Record<string, unknown>> = {
      'adonis-agent-stream': await import('../index.js'),
      'adonis-agent-stream/schema': await import('../src/schema/index.js'),
    }
    for (const stub of [
      'stubs/make/migration/agent_stream_tables.stub',
      'stubs/config/agent_stream.stub',
    ]) {
      const source = await readFile(new URL(`../${stub}`, import.meta.url), 'utf8')
      const imports = [
        ...source.matchAll(/import \{([^}]+)\} from '(adonis-agent-stream(?:\/[^']+)?)'/g),
      ]
      assert.isAbove(imports.length, 0, stub)
      for (const [, names, entry] of imports) {
        assert.property(entries, entry, `${stub} imports ${entry}`)
        for (const name of names
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean)) {
          assert.isFunction(entries[entry][name], `${stub} imports ${name} from ${entry}`)
        }
      }
    }
  })

  test('defineConfig refuses a bad duration, naming the field', ({ assert }) => {
    assert.throws(() => defineConfig({ lease: 'forever' }), /"lease" must be a duration/)
    assert.throws(() => defineConfig({ maxFrameBytes: 1 }), /"maxFrameBytes"/)
    assert.throws(() => defineConfig({ outage: { bound: 'long' } }), /"outage.bound"/)
    assert.throws(() => defineConfig({ outage: { bufferBytes: 1.5 } }), /"outage.bufferBytes"/)
    assert.throws(() => defineConfig({ readerBytes: 10 }), /"readerBytes" must be an integer/)
    assert.throws(() => defineConfig({ windowBytes: 1.5e3 + 0.5 }), /"windowBytes"/)
  })

  test('the outage bound and buffer reach the sink (defaults 30 s and 4 MiB)', async ({
    assert,
  }) => {
    const defaults = await setupApp({})
    const sink = (await defaults.container.make('agentStream')).sink
    assert.equal(sink.options.outageBoundMs, 30_000)
    assert.equal(sink.options.outageBufferBytes, 4_194_304)
    const set = await setupApp({ outage: { bound: '2s', bufferBytes: 65_536 } })
    const configured = (await set.container.make('agentStream')).sink
    assert.equal(configured.options.outageBoundMs, 2000)
    assert.equal(configured.options.outageBufferBytes, 65_536)
  })
})
