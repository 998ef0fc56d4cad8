import { test } from '@japa/runner'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import {
  allBlocks,
  anchorsOf,
  blocksOf,
  docFiles,
  linksOf,
  type DocBlock,
} from './helpers/doc_blocks.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const COMPAT = join(ROOT, 'compat/copilotkit')
/** The host app around the blocks: its own functions and values, its kernel's middleware. */
const FIXTURES = ['app.d.ts', 'kernel.d.ts'].map((name) => join(ROOT, 'tests/fixtures/docs', name))

/** The package's own names, resolved to its sources (a reader's app resolves them to build/). */
const PATHS: Record<string, string[]> = {
  'adonis-agent-stream': ['index.ts'],
  'adonis-agent-stream/services/main': ['services/main.ts'],
  'adonis-agent-stream/agent_stream_provider': ['providers/agent_stream_provider.ts'],
  'adonis-agent-stream/ai-sdk': ['src/runners/ai_sdk/index.ts'],
  'adonis-agent-stream/openai-agents': ['src/runners/openai_agents/index.ts'],
  'adonis-agent-stream/langgraph': ['src/runners/langgraph/index.ts'],
  'adonis-agent-stream/mastra': ['src/runners/mastra/index.ts'],
  'adonis-agent-stream/agui-agent': ['src/runners/agui_agent/index.ts'],
  'adonis-agent-stream/ui-message-stream': ['src/runners/ui_message_stream/index.ts'],
  'adonis-agent-stream/copilotkit': ['src/copilotkit/index.ts'],
  'adonis-agent-stream/testing': ['src/testing/index.ts'],
  'adonis-agent-stream/types': ['src/types/index.ts'],
  'adonis-agent-stream/schema': ['src/schema/index.ts'],
}

/** Imports a block may make only where their package is installed (checked by their own suite). */
const ELSEWHERE = [/^@copilotkit\//]

/**
 * Type-checks blocks as an app's strict TypeScript would: each block its own module (its names
 * never meet another block's), the page's DOM for `tsx` blocks, the host app's own functions as
 * `tests/fixtures/docs/` declares them. Written under `under`, so imports resolve from
 * there (the CopilotKit blocks from the compat suite's install). Returns one line per error,
 * naming the block.
 */
async function typeCheck(blocks: DocBlock[], under = join(ROOT, 'tests')) {
  const dir = await mkdtemp(join(under, 'tmp-docs-'))
  try {
    const files = new Map<string, DocBlock>()
    for (const [index, block] of blocks.entries()) {
      const name = join(dir, `block_${index}.${block.lang}`)
      files.set(name, block)
      await writeFile(name, `${block.code}\n\nexport {}\n`)
    }
    const program = ts.createProgram({
      rootNames: [...files.keys(), ...FIXTURES],
      options: {
        target: ts.ScriptTarget.ESNext,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.esnext.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
        types: ['node'],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        esModuleInterop: true,
        experimentalDecorators: true,
        allowImportingTsExtensions: true,
        jsx: ts.JsxEmit.ReactJSX,
        baseUrl: ROOT,
        paths: PATHS,
      },
    })
    const errors: string[] = []
    for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
      const block = diagnostic.file && files.get(diagnostic.file.fileName)
      if (!block) continue
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')
      errors.push(`${block.file}:${block.line + 1 + line}: ${message}`)
    }
    return errors
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const imports = (block: DocBlock) => [...block.code.matchAll(/from '([^']+)'/g)].map((m) => m[1])

test.group('Docs: every TypeScript block of the README and docs/ type-checks', () => {
  test('each block compiles under strict TypeScript against the package and its peers', async ({
    assert,
  }) => {
    const blocks = (await allBlocks(ROOT)).filter(
      (block) => !imports(block).some((spec) => ELSEWHERE.some((rule) => rule.test(spec)))
    )
    assert.isAbove(blocks.length, 10)
    assert.deepEqual(await typeCheck(blocks), [])
  }).timeout(300_000)

  test('a block that does not type-check is reported with its file and line', async ({
    assert,
  }) => {
    const blocks = blocksOf(
      'example.md',
      ['text', '```ts', "const port: number = '3333'", '```'].join('\n')
    )
    const errors = await typeCheck(blocks)
    assert.lengthOf(errors, 1)
    assert.match(errors[0], /^example\.md:3: /)
  }).timeout(300_000)

  test("the blocks that import CopilotKit, against the compat suite's install", async ({
    assert,
  }) => {
    const blocks = (await allBlocks(ROOT)).filter((block) =>
      imports(block).some((spec) => ELSEWHERE.some((rule) => rule.test(spec)))
    )
    assert.isAbove(blocks.length, 0)
    assert.deepEqual(await typeCheck(blocks, COMPAT), [])
  })
    .skip(
      !existsSync(join(COMPAT, 'node_modules/@copilotkit')) && !process.env.DOCS_COPILOTKIT,
      'CopilotKit is installed by npm run test:copilotkit, which runs this test again'
    )
    .timeout(300_000)
})

test.group('Docs: every link of the README and docs/ lands', () => {
  test('each relative link names a file that exists, and a heading of it', async ({ assert }) => {
    const broken: string[] = []
    let checked = 0
    for (const file of await docFiles(ROOT)) {
      const text = await readFile(join(ROOT, file), 'utf8')
      for (const link of linksOf(text)) {
        checked++
        const [path, anchor] = link.split('#')
        const target = path ? join(dirname(join(ROOT, file)), path) : join(ROOT, file)
        if (!existsSync(target)) {
          broken.push(`${file}: ${link} (no such file)`)
        } else if (anchor && !anchorsOf(await readFile(target, 'utf8')).has(anchor)) {
          broken.push(`${file}: ${link} (no such heading)`)
        }
      }
    }
    assert.isAbove(checked, 40)
    assert.deepEqual(broken, [])
  })
})
