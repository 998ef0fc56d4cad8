import { test } from '@japa/runner'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const ROOT = new URL('../', import.meta.url)
const DEPCRUISE = fileURLToPath(
  new URL('node_modules/dependency-cruiser/bin/dependency-cruiser.mjs', ROOT)
)
const CONFIG = fileURLToPath(new URL('.dependency-cruiser.cjs', ROOT))
const run = promisify(execFile)

/** Run dependency-cruiser with the project's rules on `root`'s src: exit code and output. */
async function check(root: string) {
  try {
    const { stdout } = await run(
      process.execPath,
      [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'err'],
      {
        cwd: root,
      }
    )
    return { code: 0, stdout }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout + failed.stderr }
  }
}

/** A fixture tree needs a tsconfig for the resolver (as the package has). */
const TSCONFIG = JSON.stringify({
  compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowJs: true },
})

test.group('Layering rules (.dependency-cruiser.cjs, run by npm run lint)', () => {
  test('a tree that keeps the layers passes', async ({ assert, fs }) => {
    await fs.create('tsconfig.json', TSCONFIG)
    await fs.create('src/errors.ts', `export class E extends Error {}\n`)
    await fs.create('src/core/frames.ts', `import { E } from '../errors.js'\nexport { E }\n`)
    await fs.create(
      'src/store/stream_store.ts',
      `import type { E } from '../core/frames.js'\nexport type S = E\n`
    )
    await fs.create(
      'src/agui/translate/translator.ts',
      `import { E } from '../../core/frames.js'\nexport * from '../ids.js'\nexport { E }\n`
    )
    await fs.create('src/agui/ids.ts', `export const ids = 1\n`)
    const result = await check(fs.basePath)
    assert.equal(result.code, 0, result.stdout)
  })

  test('parking calling the runner, a cycle and an impure translator are each named', async ({
    assert,
    fs,
  }) => {
    await fs.create('tsconfig.json', TSCONFIG)
    await fs.create('src/runner/driver.ts', `export const driver = 1\n`)
    await fs.create(
      'src/parking/decisions.ts',
      `import { driver } from '../runner/driver.js'\nexport const decisions = driver\n`
    )
    await fs.create('src/sink/a.ts', `import { b } from './b.js'\nexport const a = b\n`)
    await fs.create(
      'src/sink/b.ts',
      `import { a } from './a.js'\nexport const b = 1\nexport { a }\n`
    )
    await fs.create(
      'src/agui/translate/t.ts',
      `import { readFile } from 'node:fs/promises'\nexport { readFile }\n`
    )
    const failed = await check(fs.basePath)
    assert.notEqual(failed.code, 0)
    assert.include(failed.stdout, 'parking-not-runner-agui-http: src/parking/decisions.ts')
    assert.include(failed.stdout, 'no-circular: src/sink/a.ts')
    assert.include(failed.stdout, 'agui-translate-pure: src/agui/translate/t.ts')
  })
  test('the /types entry re-exports types of any layer, and loads no code of ours', async ({
    assert,
    fs,
  }) => {
    await fs.create('tsconfig.json', TSCONFIG)
    await fs.create('src/http/routes.ts', `export interface RoutesOptions { prefix?: string }\n`)
    await fs.create('src/types/extended.ts', `export {}\n`)
    await fs.create(
      'src/types/index.ts',
      `import './extended.js'\nexport type { RoutesOptions } from '../http/routes.js'\n`
    )
    assert.equal((await check(fs.basePath)).code, 0)

    await fs.create('src/define_config.ts', `export const defineConfig = () => ({})\n`)
    await fs.create(
      'src/types/index.ts',
      `export type { RoutesOptions } from '../http/routes.js'\nexport { defineConfig } from '../define_config.js'\n`
    )
    const failed = await check(fs.basePath)
    assert.notEqual(failed.code, 0)
    assert.include(failed.stdout, 'types-entry-types-only: src/types/index.ts')
  })
})
