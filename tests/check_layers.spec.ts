import { test } from '@japa/runner'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const SCRIPT = fileURLToPath(new URL('../scripts/check_layers.mjs', import.meta.url))
const run = promisify(execFile)

/** Run the checker on `root`: its exit code and what it printed. */
async function check(root: string, ...flags: string[]) {
  try {
    const { stdout } = await run(process.execPath, [SCRIPT, '--root', root, ...flags])
    return { code: 0, stdout }
  } catch (error) {
    const failed = error as { code: number; stdout: string }
    return { code: failed.code, stdout: failed.stdout }
  }
}

test.group('scripts/check_layers.mjs', () => {
  test('a tree that keeps the layers passes', async ({ assert, fs }) => {
    await fs.create('src/errors.ts', `export class E extends Error {}\n`)
    await fs.create('src/core/frames.ts', `import { E } from '../errors.js'\nexport { E }\n`)
    await fs.create(
      'src/store/stream_store.ts',
      `import type { E } from '../core/frames.js'\nimport knex from 'knex'\nexport type S = E\n`
    )
    await fs.create(
      'src/agui/translate/translator.ts',
      `import {\n  E,\n} from '../../core/frames.js'\nexport * from '../ids.js'\n`
    )
    await fs.create('src/agui/ids.ts', `export const ids = 1\n`)
    await fs.create(
      'src/http/routes.ts',
      `import type { Router } from '@adonisjs/core/http'\nexport type R = Router\n`
    )
    const result = await check(fs.basePath)
    assert.equal(result.code, 0, result.stdout)
    assert.match(result.stdout, /Layers ok: 6 files/)
  })

  test('a violation fails the check, naming the file, the import and the rule', async ({
    assert,
    fs,
  }) => {
    await fs.create('src/errors.ts', `export class E extends Error {}\n`)
    await fs.create('src/runner/driver.ts', `export const driver = 1\n`)
    await fs.create(
      'src/parking/service.ts',
      `// import { nothing } from '../http/routes.js' (a comment is not an import)\n` +
        `import { driver } from '../runner/driver.js'\nexport const service = driver\n`
    )
    const failed = await check(fs.basePath)
    assert.equal(failed.code, 1)
    assert.include(
      failed.stdout,
      'src/parking/service.ts -> ../runner/driver.js (src/runner/driver.ts) [parking-not-runner-agui-http]'
    )
    assert.notInclude(failed.stdout, 'http/routes')
    assert.include(failed.stdout, '1 layering violation(s)')

    const reported = await check(fs.basePath, '--report')
    assert.equal(reported.code, 0)
    assert.include(reported.stdout, '[parking-not-runner-agui-http]')
  })

  test('cycles, an impure translator and stray framework imports are named', async ({
    assert,
    fs,
  }) => {
    await fs.create('src/sink/a.ts', `import { b } from './b.js'\nexport const a = b\n`)
    await fs.create(
      'src/sink/b.ts',
      `export const b = 1\nexport const lazy = () => import('./a.js')\n`
    )
    await fs.create('src/agui/translate/t.ts', `import { readFile } from 'node:fs/promises'\n`)
    await fs.create('src/core/run.ts', `import type { HttpContext } from '@adonisjs/core/http'\n`)
    const failed = await check(fs.basePath)
    assert.equal(failed.code, 1)
    assert.include(failed.stdout, 'src/sink/a.ts -> src/sink/b.ts -> src/sink/a.ts [no-circular]')
    assert.include(
      failed.stdout,
      `src/agui/translate/t.ts -> node:fs/promises [agui-translate-pure]`
    )
    assert.include(
      failed.stdout,
      'src/core/run.ts -> @adonisjs/core/http [http-framework-only-in-transport]'
    )
  })
})
