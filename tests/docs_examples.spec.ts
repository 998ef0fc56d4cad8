import { test } from '@japa/runner'
import type { Assert } from '@japa/assert'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { blocksOf } from './helpers/doc_blocks.js'
import { setupApp } from './helpers/app.js'
import { resetTables } from './helpers/db.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))

/** The package's names as a reader's app imports them, mapped to the sources. */
const SOURCES: Record<string, string> = {
  'adonis-agent-stream': 'index.ts',
  'adonis-agent-stream/ai-sdk': 'src/runners/ai_sdk/index.ts',
  'adonis-agent-stream/testing': 'src/testing/index.ts',
  'adonis-agent-stream/schema': 'src/schema/index.ts',
  'adonis-agent-stream/types': 'src/types/index.ts',
}

type Body = (context: { assert: Assert }) => Promise<void>

/**
 * A docs block written as a Japa spec of the reader's app, made runnable here: its `test()`
 * calls are collected instead of registered, its imports of the package point at the sources.
 */
async function loadSpec(code: string, name: string) {
  const collected: { title: string; body: Body }[] = []
  ;(globalThis as any).__docTests = collected
  let source = code.replace(
    /^import \{ test \} from '@japa\/runner'$/m,
    'const test = (title: string, body: any) => (globalThis as any).__docTests.push({ title, body })'
  )
  source = source.replace(/from '(adonis-agent-stream[^']*)'/g, (match, spec: string) =>
    SOURCES[spec] ? `from '${pathToFileURL(join(ROOT, SOURCES[spec])).href}'` : match
  )
  const dir = join(ROOT, 'tests', 'tmp', 'docs-examples')
  await mkdir(dir, { recursive: true })
  const file = join(dir, `${name}.ts`)
  await writeFile(file, source)
  await import(`${pathToFileURL(file).href}?${Date.now()}`)
  await rm(file)
  return collected
}

/** The blocks of `page` that are an app's Japa spec (they import `test` from `@japa/runner`). */
async function specBlocks(page: string) {
  const text = await readFile(join(ROOT, page), 'utf8')
  return blocksOf(page, text).filter((block) => block.code.includes("from '@japa/runner'"))
}

test.group("Docs: the examples written as an app's tests run, and pass", () => {
  test('docs/ai-sdk.md: scripting MockLanguageModelV3 for your own tools', async ({ assert }) => {
    const app = await setupApp()
    await resetTables(await app.container.make('lucid.db'))
    const [block] = await specBlocks('docs/ai-sdk.md')
    assert.exists(block, 'docs/ai-sdk.md has a test written with MockLanguageModelV3')
    const tests = await loadSpec(block.code, 'ai_sdk_mock_model')
    assert.isAbove(tests.length, 0)
    for (const { body } of tests) await body({ assert })
  }).timeout(60_000)
})
