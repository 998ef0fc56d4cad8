import { test } from '@japa/runner'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify, stripVTControlCharacters } from 'node:util'

const BIN_TEST = fileURLToPath(new URL('../bin/test.ts', import.meta.url))
/** A fixture project whose `tests/` holds one spec that passes and leaves a stray rejection. */
const STRAY = fileURLToPath(new URL('./fixtures/stray_rejection/', import.meta.url))

/** `bin/test.ts` run in `cwd` (its `tests/**` globbed there): exit code and all its output. */
async function runSuite(cwd: string) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import=@poppinss/ts-exec', BIN_TEST],
      { cwd, env: process.env }
    )
    return { code: 0, output: stripVTControlCharacters(stdout + stderr) }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, output: stripVTControlCharacters(failed.stdout + failed.stderr) }
  }
}

test.group('The suite | an unhandled rejection fails the run', () => {
  test('a stray rejection in a passing test exits non-zero and is printed', async ({ assert }) => {
    const { code, output } = await runSuite(STRAY)
    // The fixture's one test passed: the rejection alone fails the run.
    assert.match(output, /Tests\s+1 passed \(1\)/)
    assert.equal(code, 1, output)
    assert.match(output, /Unhandled Rejection/)
    assert.match(output, /Error: stray/)
    assert.include(output, 'stray_rejection.spec.ts:')
  }).timeout(20_000)
})
