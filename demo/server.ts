import { mkdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { IgnitorFactory } from '@adonisjs/core/factories'
import { defineConfig as defineLoggerConfig } from '@adonisjs/core/logger'
import type { ApplicationService } from '@adonisjs/core/types'
import { defineConfig as defineLucidConfig } from '@adonisjs/lucid'
import { MigrationRunner } from '@adonisjs/lucid/migration'
import { defineConfig } from '../src/define_config.js'
import type { LanguageModel } from 'ai'
import { demoAgent, openAiModel, scriptedDemoModel } from './agent.js'
import type { AgentStream } from '../src/agent_stream.js'
import { bundleUseChat } from './bundle.js'
import { AGENT_NAMES, loadEmailAgent } from './agents/index.js'
import type { RunnerFactory } from '../src/define_config.js'
import type { AgentRunner } from '../src/runner/contract.js'

/** The repository is the app root: Lucid finds the package's own `database/migrations`. */
const APP_ROOT = new URL('../', import.meta.url)
/** Where AdonisJS writes route types in development: out of the linted, type-checked tree. */
const GENERATED = 'node_modules/.cache/adonis-agent-stream-demo/server'
const PUBLIC = new URL('public/', import.meta.url)
const DEFAULT_DB_FILE = fileURLToPath(new URL('tmp/demo.sqlite3', import.meta.url))

/** Where the routes live: the chat page talks AG-UI to `<prefix>/agui`. */
export const PREFIX = '/agent'

/** The one person of the demo: the chat and the admin page both act for them. */
export const DEMO_USER = { id: 'demo-user', roles: ['admin'] }

export interface DemoOptions {
  /** Port on 127.0.0.1; 0 picks a free one. Default `PORT` or 3333. */
  port?: number
  /** Print nothing (tests, the check). Default false. */
  quiet?: boolean
  /** The SQLite file. Default `demo/tmp/demo.sqlite3`. */
  dbFile?: string
  /** Parts per second of the scripted model's stream. Default 30. */
  tokensPerSecond?: number
  /**
   * The agent's model: `'scripted'` (the AI SDK's mock model playing the demo's scenario), or
   * any AI SDK model. Default: OpenAI (`OPENAI_MODEL`, default `gpt-4o-mini`) when
   * `OPENAI_API_KEY` is set, else the scripted one.
   */
  model?: 'scripted' | LanguageModel
  /**
   * Which agent: `'ai-sdk'` (default: the demo's full scenario), or a framework's runner playing
   * the email scenario on its own test model (`AGENT_NAMES` of demo/agents/index.ts:
   * `openai-agents`, `langgraph`, `mastra`, `agui-agent`, `ui-message-stream`, `ai-sdk-email`).
   */
  agent?: string
}

export interface Demo {
  /** `http://127.0.0.1:<port>` */
  url: string
  chatUrl: string
  /** The `useChat` page (AI SDK UI message stream door). */
  useChatUrl: string
  adminUrl: string
  app: ApplicationService
  agentStream: AgentStream
  /** Close the server, let running segments finish, terminate the app. */
  stop: () => Promise<void>
}

function sqlite(filename: string) {
  mkdirSync(dirname(filename), { recursive: true })
  return {
    client: 'better-sqlite3' as const,
    connection: { filename },
    useNullAsDefault: true,
    migrations: { naturalSort: true },
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

/** The package migration, through Lucid's migrator (nothing to do when already migrated). */
async function migrate(app: ApplicationService) {
  const db = await app.container.make('lucid.db')
  const runner = new MigrationRunner(db, app, {
    direction: 'up',
    connectionName: 'demo',
    disableLocks: true,
  })
  await runner.run()
  if (runner.error) throw runner.error
  return Object.keys(runner.migratedFiles).length
}

/**
 * Boot the demo: an AdonisJS app (Lucid on SQLite, this package's provider, the AI SDK agent),
 * migrated, with the package's routes under `/agent`, the chat page at `/` and the admin page at
 * `/agent/admin`, served on 127.0.0.1.
 */
export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const port = options.port ?? Number(process.env.PORT ?? 3333)
  const print = options.quiet ? () => {} : (line: string) => console.log(line)
  const framework = options.agent && options.agent !== 'ai-sdk' ? options.agent : null
  if (framework && !AGENT_NAMES.includes(framework)) {
    throw new Error(`unknown --agent "${framework}": one of ${AGENT_NAMES.join(', ')}`)
  }
  const model =
    framework || options.model === 'scripted' ? null : (options.model ?? (await openAiModel()))
  print(
    framework
      ? `Agent: ${framework}, its framework's test model playing the email scenario (ask for the weekly report)`
      : model
        ? `Agent: AI SDK on ${typeof model === 'string' ? model : model.modelId}`
        : 'Agent: AI SDK on the scripted mock model (set OPENAI_API_KEY for a real one)'
  )
  // A framework's agent is made from the booted app (its state, if any, on the app's database).
  const runner: RunnerFactory | AgentRunner = framework
    ? async (booted) =>
        loadEmailAgent(framework, {
          db: await booted.container.make('lucid.db'),
          onSend: (input) => print(`send_email ran with ${JSON.stringify(input)}`),
        })
    : demoAgent(model ?? scriptedDemoModel(options.tokensPerSecond ?? 30))
  const ignitor = new IgnitorFactory()
    .withCoreProviders()
    .withCoreConfig()
    .merge({
      config: {
        logger: defineLoggerConfig({
          default: 'app',
          loggers: { app: { enabled: !options.quiet, level: 'warn' } },
        }),
        database: defineLucidConfig({
          connection: 'demo',
          connections: { demo: sqlite(options.dbFile ?? DEFAULT_DB_FILE) },
        }),
        agent_stream: defineConfig({
          runner,
          principal: () => DEMO_USER,
          admin: () => true,
          // The default already lets the requester decide; spelled out for the demo's one person.
          approverPolicy: (principal) => principal?.id === DEMO_USER.id,
          sweepInterval: '2s',
        }),
      },
      rcFileContents: {
        directories: { generatedServer: GENERATED },
        providers: [
          () => import('@adonisjs/lucid/database_provider'),
          () => import('../providers/agent_stream_provider.js'),
        ],
      },
    })
    .create(APP_ROOT, {
      importer: (path) =>
        path.startsWith('./') || path.startsWith('../')
          ? import(new URL(path, APP_ROOT).href)
          : import(path),
    })
  const app = ignitor.createApp('web')
  await app.init()
  await app.boot()
  let http: ReturnType<typeof createServer> | undefined
  let agentStream: AgentStream | undefined
  try {
    const migrated = await migrate(app)
    if (migrated > 0)
      print(`Migrated the demo database (${migrated} migration${migrated === 1 ? '' : 's'}).`)
    agentStream = await app.container.make('agentStream')
    const router = await app.container.make('router')
    const server = await app.container.make('server')
    router.use([() => import('@adonisjs/core/bodyparser_middleware')])
    agentStream.registerRoutes({ prefix: PREFIX })
    const file =
      (name: string, type: string) =>
      async ({ response }: any) => {
        response.header('Content-Type', type)
        response.header('Cache-Control', 'no-store')
        response.header('X-Content-Type-Options', 'nosniff')
        response.header(
          'Content-Security-Policy',
          "default-src 'self'; style-src 'self' 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'"
        )
        return response.send(await readFile(new URL(name, PUBLIC), 'utf8'))
      }
    router.get('/', file('chat.html', 'text/html; charset=utf-8'))
    router.get('/chat.js', file('chat.js', 'text/javascript; charset=utf-8'))
    router.get('/demo.css', file('demo.css', 'text/css; charset=utf-8'))
    // The useChat page: React + @ai-sdk/react, bundled with esbuild now (about a second).
    const useChatScript = await bundleUseChat()
    router.get('/usechat', file('usechat.html', 'text/html; charset=utf-8'))
    router.get('/usechat.js', async ({ response }: any) => {
      response.header('Content-Type', 'text/javascript; charset=utf-8')
      response.header('Cache-Control', 'no-store')
      response.header('X-Content-Type-Options', 'nosniff')
      return response.send(useChatScript)
    })
    router.get('/favicon.ico', ({ response }) => response.status(204).send(''))
    // `start` runs the providers' `ready` hooks: the package's sweeper starts there.
    await app.start(async () => {
      await server.boot()
      http = createServer(server.handle.bind(server))
      server.setNodeServer(http)
      await new Promise<void>((resolve, reject) => {
        http!.once('error', reject)
        http!.listen(port, '127.0.0.1', () => resolve())
      })
    })
  } catch (error) {
    http?.close()
    await app.terminate()
    throw error
  }
  const url = `http://127.0.0.1:${(http!.address() as AddressInfo).port}`
  const demo: Demo = {
    url,
    chatUrl: `${url}/`,
    useChatUrl: `${url}/usechat`,
    adminUrl: `${url}${PREFIX}/admin`,
    app,
    agentStream: agentStream!,
    stop: async () => {
      agentStream!.http.closeAll()
      http!.closeAllConnections()
      await new Promise((resolve) => http!.close(resolve))
      // A segment still writing gets a few seconds to end (it parks or finishes on its own).
      await Promise.race([
        agentStream!.driver.settled(),
        new Promise((resolve) => setTimeout(resolve, 5000).unref()),
      ])
      await app.terminate()
    },
  }
  print(`Chat:  ${demo.chatUrl}`)
  print(`useChat: ${demo.useChatUrl}`)
  print(`Admin: ${demo.adminUrl}`)
  return demo
}
