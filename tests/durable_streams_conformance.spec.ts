import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from '@japa/runner'

/**
 * The Durable Streams door against the official conformance suite
 * (`@durable-streams/server-conformance-tests` 0.3.6, scripts/test_durable_streams_conformance.mjs,
 * a Vitest run in a process of its own) on this suite's database, through both transports: the
 * Fetch handler on `node:http`, and the AdonisJS routes.
 */

/**
 * The suite's count in 0.3.6 with `subscriptions: true` (its 6 tests of webhooks and pull-wake
 * included): 338 tests, none skipped. A new version of the suite changes it.
 */
const PASSED = 338
const SKIPPED = 0

function runSuite(transport: 'fetch' | 'adonis'): Promise<{ code: number | null; output: string }> {
  const script = fileURLToPath(
    new URL('../scripts/test_durable_streams_conformance.mjs', import.meta.url)
  )
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, VALIDATION_REPORTER: '', DS_TRANSPORT: transport },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}

for (const transport of ['fetch', 'adonis'] as const) {
  test(`the conformance suite passes through the ${transport} transport`, async ({ assert }) => {
    const { code, output } = await runSuite(transport)
    const failed = output.split('\n').filter((line) => line.startsWith('FAILED '))
    assert.deepEqual(failed, [], output.slice(-4000))
    const summary =
      /durable streams conformance \([^)]*\): (\d+) passed, (\d+) failed, (\d+) skipped/.exec(
        output
      )
    assert.isNotNull(summary, output.slice(-4000))
    assert.deepEqual(
      { passed: Number(summary![1]), failed: Number(summary![2]), skipped: Number(summary![3]) },
      { passed: PASSED, failed: 0, skipped: SKIPPED }
    )
    assert.equal(code, 0)
  }).timeout(900_000)
}
