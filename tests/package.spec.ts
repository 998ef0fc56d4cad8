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
import { DEFAULT_TABLES } from '../src/store/schema.js'

/**
 * The package as npm ships it: `npm pack` in a copy of the checkout (its git files, no `build/`),
 * so the tarball holds what `prepack` built; then the tarball unpacked as an app's
 * `node_modules/adonis-agent-stream` and used by a fresh AdonisJS app with plain Node
 * (tests/fixtures/packed_app.mjs). Packing runs once for the file.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const run = promisify(execFile)

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

    assert.includeMembers(report.exports, ['defineConfig', 'AgentStream', 'configure', 'stubsRoot'])
    assert.isTrue(report.serviceIsSingleton)
    assert.isTrue(report.serviceIsAgentStream)
    assert.equal(report.status, 'ended')
    assert.sameMembers(report.commands, ['agent-stream:inspect', 'agent-stream:purge'])
    assert.include(report.subpaths['testing'], 'scriptedAgent')
    assert.include(report.subpaths['ai-sdk'], 'aiSdkAgent')
    assert.include(report.subpaths['copilotkit'], 'AgentStreamRunner')
    assert.include(report.subpaths['commands/purge'], 'default')

    assert.equal(report.stubsRoot, join(packageDir, 'build', 'stubs'))
    assert.includeMembers(report.stubs, [
      'config/agent_stream.stub',
      'make/migration/agent_stream_tables.stub',
    ])
  }).timeout(300_000)
})
