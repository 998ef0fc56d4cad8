import { test } from '@japa/runner'
import { execFile } from 'node:child_process'
import {
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { DEFAULT_TABLES } from '../src/store/schema.js'

/**
 * The package as npm ships it: `npm pack` in a copy of the checkout (its git files, no `build/`),
 * so the tarball holds what `prepack` built; then the tarball unpacked as an app's
 * `node_modules/adonis-agent-stream` and used by a fresh AdonisJS app with plain Node
 * (tests/fixtures/packed_app.mjs). Packing runs once for the file.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const run = promisify(execFile)

/**
 * The public face: every name an app can import, per entry (`adonis-agent-stream` and its
 * subpaths), values and types apart. The README and docs/ import nothing else; a name added or
 * dropped here is a change of the package's API.
 */
const FACE: Record<string, { values: string[]; types: string[] }> = {
  'adonis-agent-stream': {
    values: [
      'AgentStream',
      'INTERRUPTED_TOOL_ERROR',
      'LucidTokenStreamSink',
      'childSinkWriter',
      'configure',
      'createAgUiFetchHandler',
      'createDurableStreamsFetchHandler',
      'createRequestLimits',
      'createRuntime',
      'createUiMessageFetchHandler',
      'defaultApproverPolicy',
      'defineConfig',
      'errors',
      'notifiers',
      'registerRoutes',
      'stubsRoot',
    ],
    types: ['AgentRunner', 'ContinueContext', 'ResumeContext', 'RunContext', 'RunOutcome'],
  },
  'adonis-agent-stream/types': {
    values: [],
    types: [
      'AdminAuthorizer',
      'AgUiFetchHandlerOptions',
      'AgentRunner',
      'AgentStreamConfig',
      'AgentStreamErrorCode',
      'TraceOptions',
      'AgentStreamEvent',
      'ApproverPolicy',
      'ContinueContext',
      'Cursor',
      'DeliveredFrame',
      'DisplayName',
      'Duration',
      'ElicitationOption',
      'ElicitationQuestion',
      'ElicitationRequest',
      'HistoryBounds',
      'LimiterManagerLike',
      'LimitsConfig',
      'LucidSinkOptions',
      'NotifierFactory',
      'ParkedItem',
      'Principal',
      'PrincipalResolver',
      'RateLimitRule',
      'RequestLimits',
      'ResolvedAgentStreamConfig',
      'ResumeContext',
      'RoutesOptions',
      'RunContext',
      'RunOutcome',
      'RunnerFactory',
      'RuntimeOptions',
      'SettledItem',
      'SinkWriter',
      'StreamFrame',
      'StreamLimitRule',
      'SubscribeOptions',
      'TokenStreamSink',
      'ToolConfirmation',
      'UiMessageFetchHandlerOptions',
      'DurableStreamsFetchHandlerOptions',
      'DurableStreamsOptions',
      'DurableAuthorize',
      'DurableAction',
      'UserMessage',
      'UserPart',
      'WebhooksConfig',
      'WebhookEndpoint',
      'LifecycleEventType',
    ],
  },
  'adonis-agent-stream/schema': {
    values: [
      'addQueueIndexes',
      'addStopColumns',
      'addTraceColumns',
      'addThreadListIndex',
      'addWriterColumns',
      'createCheckpointsTable',
      'createDoorTables',
      'createDurableStreamTables',
      'createDsSubscriptionTables',
      'createLangGraphTables',
      'createMastraSnapshotsTable',
      'createParkingTables',
      'createPurgeRunsTable',
      'createRunQueueTable',
      'createStreamTables',
      'createThreadsTable',
      'createWebhookTables',
      'dropCheckpointsTable',
      'dropDoorTables',
      'dropDurableStreamTables',
      'dropDsSubscriptionTables',
      'dropLangGraphTables',
      'dropMastraSnapshotsTable',
      'dropParkingTables',
      'dropPurgeRunsTable',
      'dropQueueIndexes',
      'dropStopColumns',
      'dropTraceColumns',
      'dropRunQueueTable',
      'dropStreamTables',
      'dropThreadListIndex',
      'dropThreadsTable',
      'dropWriterColumns',
      'dropWebhookTables',
      'langGraphTableNames',
      'tableNames',
    ],
    types: ['LangGraphTableNames', 'TableNames'],
  },
  'adonis-agent-stream/ai-sdk': {
    values: ['aiSdkAgent', 'askTool'],
    types: ['AiSdkAgentOptions', 'ApprovalOptions', 'AskInput', 'AskOutput', 'SharedState'],
  },
  'adonis-agent-stream/langgraph': {
    values: [
      'CUSTOM_EVENT',
      'LucidSaver',
      'REJECTION_MESSAGES',
      'langGraphAgent',
      'requestApproval',
    ],
    types: [
      'CustomChunkMapper',
      'HitlRequest',
      'LangGraphAgentOptions',
      'LangGraphApprovalOptions',
      'LangGraphCheckpoint',
      'LangGraphGraph',
      'LucidSaverOptions',
      'ToolCallInterrupt',
      'ToolDecision',
    ],
  },
  'adonis-agent-stream/openai-agents': {
    values: ['openAiAgent'],
    types: ['ApprovalOptions', 'OpenAiAgentOptions', 'OpenAiAgentsCheckpoint', 'OpenAiRunOptions'],
  },
  'adonis-agent-stream/mastra': {
    values: ['LucidMastraWorkflows', 'lucidMastraStore', 'mastraAgent'],
    types: ['LucidMastraStoreOptions', 'MastraAgentOptions'],
  },
  'adonis-agent-stream/agui-agent': {
    values: ['aguiAgent'],
    types: ['AgUiAgentCheckpoint', 'AgUiAgentOptions', 'ApprovalOptions'],
  },
  'adonis-agent-stream/ui-message-stream': {
    values: ['uiMessageStreamAgent'],
    types: [
      'ApprovalOptions',
      'UiMessageStreamAgentOptions',
      'UiMessageStreamArgs',
      'UiMessageStreamCheckpoint',
      'UiMessageStreamSource',
    ],
  },
  'adonis-agent-stream/copilotkit': {
    values: ['AgentStreamRunner'],
    types: ['AgentStreamRunnerOptions'],
  },
  'adonis-agent-stream/testing': { values: ['scriptedAgent'], types: ['ScriptedAgentOptions'] },
  'adonis-agent-stream/services/main': { values: ['default'], types: [] },
  'adonis-agent-stream/agent_stream_provider': { values: ['default'], types: [] },
}

/**
 * What an app's own TypeScript does with the installed package: one value or type of most
 * entries used as documented, the container binding `adonis-agent-stream/types` brings, and
 * a wrong use of each kept an error (`@ts-expect-error`), so no entry's types can quietly turn
 * into `any`.
 */
const USAGE = `
import type { ApplicationService } from '@adonisjs/core/types'
import { defineConfig, type AgentRunner, type RunOutcome } from 'adonis-agent-stream'
import type { StreamFrame } from 'adonis-agent-stream/types'
import { createStreamTables, tableNames } from 'adonis-agent-stream/schema'
import { askTool } from 'adonis-agent-stream/ai-sdk'
import { AgentStreamRunner } from 'adonis-agent-stream/copilotkit'
import { scriptedAgent } from 'adonis-agent-stream/testing'

export async function bound(app: ApplicationService) {
  const agentStream = await app.container.make('agentStream')
  // @ts-expect-error the binding is the package's AgentStream, not any
  const wrong: string = agentStream
  return [wrong, agentStream.sink] as const
}

const runner: AgentRunner = scriptedAgent()
export const config = defineConfig({ runner })
export const frame: StreamFrame = { t: 'text', v: 'hello' }
// @ts-expect-error a frame's t is one of the SPI's kinds
export const notAFrame: StreamFrame = { t: 'sound', v: 'hello' }
// @ts-expect-error an outcome is one of four statuses
export const notAnOutcome: RunOutcome = { status: 'done' }
export const tables = tableNames({ streams: 'streams' })
export const up = (schema: Parameters<typeof createStreamTables>[0]) =>
  createStreamTables(schema, 'pg', tables)
// @ts-expect-error the dialect is required
export const noDialect = (schema: Parameters<typeof createStreamTables>[0]) => createStreamTables(schema)
export const ask = askTool({ description: 'Ask the person' })
export const copilot = new AgentStreamRunner({ url: 'http://127.0.0.1:3333/agent/agui' })
`

type Report = {
  migrations: string[]
  migratedFiles: string[]
  tables: string[]
  exports: string[]
  serviceIsSingleton: boolean
  serviceIsAgentStream: boolean
  status: string | undefined
  commands: string[]
  subpaths: Record<string, string[]>
  stubsRoot: string
  stubs: string[]
}

let packing: Promise<{ tmp: string; packageDir: string; files: string[] }> | undefined

/** Copies the checkout's files (tracked and not ignored) to `tmp/checkout` and packs it there. */
async function pack() {
  const tmp = await mkdtemp(join(tmpdir(), 'agent-stream-pack-'))
  const checkout = join(tmp, 'checkout')
  const { stdout: listed } = await run(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }
  )
  for (const file of listed.split('\0').filter(Boolean)) {
    if (!existsSync(join(ROOT, file))) continue // deleted in the work tree, not yet committed
    await mkdir(dirname(join(checkout, file)), { recursive: true })
    await copyFile(join(ROOT, file), join(checkout, file))
  }
  const nodeModules = await realpath(join(ROOT, 'node_modules'))
  await symlink(nodeModules, join(checkout, 'node_modules'), 'dir')

  const { stdout } = await run('npm', ['pack', '--pack-destination', tmp], {
    cwd: checkout,
    maxBuffer: 64 * 1024 * 1024,
  })
  const tarball = join(tmp, stdout.trim().split('\n').at(-1)!)

  // The tarball as an installed dependency of an app whose other packages are the repository's.
  const app = join(tmp, 'app')
  const packageDir = join(app, 'node_modules', 'adonis-agent-stream')
  await mkdir(packageDir, { recursive: true })
  await run('tar', ['-xzf', tarball, '-C', packageDir, '--strip-components=1'])
  for (const entry of await readdir(nodeModules)) {
    if (entry === 'adonis-agent-stream' || entry.startsWith('.')) continue
    await symlink(join(nodeModules, entry), join(app, 'node_modules', entry))
  }
  const files = (await readdir(packageDir, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => posix.join(posix.relative(packageDir, entry.parentPath), entry.name))
  return { tmp, packageDir, files }
}

function packed() {
  packing ??= pack()
  return packing
}

/** The files an `exports` target names (`*` expanded over the commands in the checkout). */
async function exportTargets(exportsMap: Record<string, string>) {
  const commands = (await readdir(join(ROOT, 'commands')))
    .filter((file) => file.endsWith('.ts'))
    .map((file) => file.replace(/\.ts$/, ''))
  return Object.values(exportsMap).flatMap((target) =>
    target.includes('*')
      ? commands.map((name) => posix.normalize(target.replace('*', name)))
      : [posix.normalize(target)]
  )
}

test.group('package: npm pack', (group) => {
  group.teardown(async () => {
    if (packing) await rm((await packing).tmp, { recursive: true, force: true })
  })

  test('the tarball holds the build: provider, services, commands and their index, stubs, every export; nothing else', async ({
    assert,
  }) => {
    const { packageDir, files } = await packed()
    const manifest = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8'))

    for (const file of [
      'build/index.js',
      'build/index.d.ts',
      'build/configure.js',
      'build/providers/agent_stream_provider.js',
      'build/services/main.js',
      'build/commands/main.js',
      'build/commands/commands.json',
      'build/commands/purge.js',
      'build/commands/inspect.js',
      'build/stubs/main.js',
      'build/stubs/config/agent_stream.stub',
      'build/stubs/make/migration/agent_stream_tables.stub',
      'build/src/store/schema.js',
    ]) {
      assert.include(files, file)
    }
    for (const target of await exportTargets(manifest.exports)) {
      assert.include(files, target, `exports names ${target}`)
      assert.include(files, target.replace(/\.js$/, '.d.ts'), `types of ${target}`)
    }
    assert.include(files, posix.normalize(manifest.main))

    // Only the build and npm's own files; no tests, bench, demo, scripts or TypeScript sources.
    for (const file of files) {
      assert.isTrue(
        file.startsWith('build/') || ['package.json', 'README.md'].includes(file),
        `unexpected ${file}`
      )
      assert.notMatch(file, /^build\/(tests|bench|demo|scripts|bin|compat|database)\//)
      assert.isFalse(file.endsWith('.ts') && !file.endsWith('.d.ts'), `source ${file}`)
    }

    // Every relative import of the shipped code names a shipped file (no `.ts` left behind).
    for (const file of files.filter((name) => name.endsWith('.js'))) {
      const code = await readFile(join(packageDir, file), 'utf8')
      for (const [, specifier] of code.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)) {
        const target = posix.join(posix.dirname(file), specifier)
        assert.include(files, target, `${file} imports ${specifier}`)
      }
    }
  }).timeout(300_000)

  test('a fresh app uses the unpacked tarball: configure, the migration, provider, services, commands', async ({
    assert,
  }) => {
    const { tmp, packageDir } = await packed()
    const app = join(tmp, 'app')
    await copyFile(
      fileURLToPath(new URL('fixtures/packed_app.mjs', import.meta.url)),
      join(app, 'main.mjs')
    )
    await writeFile(
      join(app, 'package.json'),
      JSON.stringify({ name: 'packed-app', private: true, type: 'module' })
    )
    const { stdout } = await run(process.execPath, ['main.mjs'], {
      cwd: app,
      maxBuffer: 16 * 1024 * 1024,
    })
    const report: Report = JSON.parse(stdout.trim().split('\n').at(-1)!)

    assert.lengthOf(report.migrations, 1)
    assert.match(report.migrations[0], /^\d+_create_agent_stream_tables\.ts$/)
    assert.lengthOf(report.migratedFiles, 1)
    for (const table of Object.values(DEFAULT_TABLES)) assert.include(report.tables, table)

    assert.sameMembers(report.exports, FACE['adonis-agent-stream'].values)
    assert.sameMembers(report.subpaths['types'], [])
    assert.isTrue(report.serviceIsSingleton)
    assert.isTrue(report.serviceIsAgentStream)
    assert.equal(report.status, 'ended')
    assert.sameMembers(report.commands, ['agent-stream:inspect', 'agent-stream:purge'])
    for (const subpath of [
      'schema',
      'testing',
      'ai-sdk',
      'langgraph',
      'openai-agents',
      'mastra',
      'agui-agent',
      'ui-message-stream',
      'copilotkit',
    ]) {
      assert.sameMembers(report.subpaths[subpath], FACE[`adonis-agent-stream/${subpath}`].values)
    }
    assert.include(report.subpaths['commands/purge'], 'default')

    assert.equal(report.stubsRoot, join(packageDir, 'build', 'stubs'))
    assert.includeMembers(report.stubs, [
      'config/agent_stream.stub',
      'make/migration/agent_stream_tables.stub',
    ])
  }).timeout(300_000)
  test("an app's TypeScript sees every entry's names, each documented, and their types hold", async ({
    assert,
  }) => {
    const { tmp, packageDir } = await packed()
    const app = join(tmp, 'app')
    const entries = Object.keys(FACE)
    const face = entries.map((entry, i) => `import * as entry${i} from '${entry}'`).join('\n')
    await writeFile(join(app, 'face.ts'), `${face}\n\nexport {}\n`)
    await writeFile(join(app, 'usage.ts'), USAGE)
    // Two programs: the usage alone, so the container binding it sees is the one `/types` brings
    // (the face imports the provider, which brings it too).
    const compile = (file: string) =>
      ts.createProgram({
        rootNames: [join(app, file)],
        options: {
          target: ts.ScriptTarget.ESNext,
          module: ts.ModuleKind.NodeNext,
          moduleResolution: ts.ModuleResolutionKind.NodeNext,
          types: ['node'],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          experimentalDecorators: true,
        },
      })
    const program = compile('face.ts')
    const checker = program.getTypeChecker()

    const faceFile = program.getSourceFile(join(app, 'face.ts'))!
    const imports = faceFile.statements.filter(ts.isImportDeclaration)
    for (const [i, declaration] of imports.entries()) {
      const entry = entries[i]
      const module = checker.getSymbolAtLocation(declaration.moduleSpecifier)
      assert.exists(module, `${entry} resolves to its types`)
      const names = checker.getExportsOfModule(module!)
      assert.sameMembers(
        names.map((symbol) => symbol.name),
        [...FACE[entry].values, ...FACE[entry].types],
        entry
      )
      for (const symbol of names) {
        const target =
          symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
        const docs = ts.displayPartsToString(target.getDocumentationComment(checker)).trim()
        assert.isAbove(docs.length, 0, `${entry}: ${symbol.name} has a docstring`)
      }
    }

    // Every declaration file of the package the entries reach compiles (its code: a docstring's
    // `{@link Type.member}` is not TypeScript's to resolve), and so does the usage, as written.
    const usage = compile('usage.ts')
    const checked = [
      ...program
        .getSourceFiles()
        .filter((file) => file.fileName.startsWith(packageDir))
        .map((file) => ({ from: program, file })),
      { from: usage, file: usage.getSourceFile(join(app, 'usage.ts'))! },
    ]
    const inComment = (text: string, at: number) =>
      text.lastIndexOf('/*', at) > text.lastIndexOf('*/', at)
    const errors: string[] = []
    for (const { from, file } of checked) {
      for (const diagnostic of [
        ...from.getSyntacticDiagnostics(file),
        ...from.getSemanticDiagnostics(file),
      ]) {
        if (inComment(file.text, diagnostic.start ?? 0)) continue
        const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
        const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')
        errors.push(`${posix.relative(app, file.fileName)}:${line + 1}: ${message}`)
      }
    }
    assert.deepEqual(errors, [])
  }).timeout(300_000)
})
