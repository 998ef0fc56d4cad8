#!/usr/bin/env node
/**
 * `npm run test:copilotkit`: the CopilotKit compatibility suite (compat/copilotkit). Installs its
 * own workspace (`npm ci` there, CopilotKit stays out of the package's dependencies) when missing
 * or older than its lock file, typechecks it and the docs' CopilotKit blocks against CopilotKit's
 * types, then runs its tests with
 * node's test runner on this Node (24):
 * CopilotKit's runtime in process against the demo app (SQLite), its headless client and its
 * React chat in Chromium (saves docs/copilotkit.png); and the AG-UI dojo's seven features
 * (compat/copilotkit/features: scripted agents on createRuntime + createAgUiFetchHandler, a
 * CopilotKit page per feature in Chromium; docs/copilotkit.md#the-ag-ui-features).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const workspace = join(root, 'compat', 'copilotkit')
const installed = join(workspace, 'node_modules', '.package-lock.json')
const lock = join(workspace, 'package-lock.json')
const env = {
  ...process.env,
  // npm run on this Node (24), whatever node is first on PATH.
  PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
  COPILOTKIT_TELEMETRY_DISABLED: 'true',
}

if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  console.log('==> npm ci in compat/copilotkit (CopilotKit, once)')
  const npm = spawnSync('npm', ['ci'], { cwd: workspace, stdio: 'inherit', env })
  if (npm.status !== 0) process.exit(npm.status ?? 1)
}

// The suite's types against CopilotKit's own: the package's runner fits its AgentRunner as it is.
console.log('==> tsc -p compat/copilotkit')
const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'compat/copilotkit'],
  { cwd: root, stdio: 'inherit', env }
)
if (tsc.status !== 0) process.exit(tsc.status ?? 1)

// The README's and docs/' code blocks that import CopilotKit, against this install (npm test
// skips them when it is missing).
console.log('==> the docs blocks that import CopilotKit')
const docs = spawnSync(
  process.execPath,
  ['--import=@poppinss/ts-exec', 'bin/test.ts', '--files', 'tests/docs_code.spec.ts'],
  { cwd: root, stdio: 'inherit', env: { ...env, DB: 'sqlite', DOCS_COPILOTKIT: '1' } }
)
if (docs.status !== 0) process.exit(docs.status ?? 1)

const tests = readdirSync(join(workspace, 'tests'))
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => join('compat', 'copilotkit', 'tests', name))
const run = spawnSync(
  process.execPath,
  ['--import=@poppinss/ts-exec', '--test', '--test-concurrency=1', ...tests],
  { cwd: root, stdio: 'inherit', env }
)
process.exit(run.status ?? 1)
