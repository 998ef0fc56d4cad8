import { test } from '@japa/runner'
import { jsonSchema, tool } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf, waitUntil } from './helpers/sink.js'
import { finish, text, toolCall } from './helpers/ai_sdk.js'

/**
 * Issue 22: a stop reaches the AI SDK runner (`aiSdkAgent`) through the agent's signal: the
 * model's stream is aborted (the provider's `abortSignal`), a running tool's `abortSignal` too,
 * and no tool that had not started runs; what was said stays and the stream ends `cancelled`.
 */

const alice = { id: 'alice' }
const asAlice = { principal: alice, via: 'api' }
const objectSchema = jsonSchema<Record<string, unknown>>({ type: 'object', properties: {} })

/** A provider stream that plays `chunks`, then waits for its call's abort (then ends it). */
function heldStream(chunks: LanguageModelV3StreamPart[], options: LanguageModelV3CallOptions) {
  return new ReadableStream<LanguageModelV3StreamPart>({
    async start(controller) {
      controller.enqueue({ type: 'stream-start', warnings: [] })
      for (const chunk of chunks) controller.enqueue(chunk)
      await new Promise<void>((resolve) => {
        if (options.abortSignal?.aborted) resolve()
        options.abortSignal?.addEventListener('abort', () => resolve())
      })
      controller.error(options.abortSignal?.reason ?? new Error('aborted'))
    },
  })
}

async function start(stack: Awaited<ReturnType<typeof setupRunner>>, id: string) {
  await stack.door.startRun(
    { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
    { message: 'hi' },
    alice
  )
}

const stored = async (stack: Awaited<ReturnType<typeof setupRunner>>, id: string) =>
  (await collect(stack.sink.replay(id) as AsyncIterable<any>))
    .filter((frame: any) => frame.t !== 'end')
    .map(({ cursor: _cursor, ...frame }) => frame)

test.group('AI SDK runner | a stop', () => {
  test('mid-answer: the model stream is aborted (the provider sees it), no tool runs, no next call', async ({
    assert,
  }) => {
    const seen = { modelAborted: false, searched: 0, calls: 0 }
    const model = new MockLanguageModelV3({
      modelId: 'held',
      doStream: async (options) => {
        seen.calls++
        options.abortSignal?.addEventListener('abort', () => (seen.modelAborted = true))
        // Says a word, then waits (a model thinking) until it is aborted.
        return { stream: heldStream(text('Hello ').slice(0, 2), options) }
      },
    })
    const search = tool({
      description: 'Search',
      inputSchema: objectSchema,
      execute: async () => {
        seen.searched++
        return { found: true }
      },
    })
    const stack = await setupRunner(aiSdkAgent({ model, tools: { search } }))
    const id = runId('aisdk-stop')
    await start(stack, id)
    await waitUntil(async () => textOf(await stored(stack, id)) === 'Hello ', 'the first word')
    const outcome = await stack.control.stop(id, asAlice)
    assert.equal(outcome.status, 'cancelled')
    await stack.driver.settled()
    assert.isTrue(seen.modelAborted)
    assert.deepEqual([seen.calls, seen.searched], [1, 0])
    const frames = await stored(stack, id)
    assert.equal(textOf(frames), 'Hello ')
    assert.deepEqual(frames.at(-1), { t: 'event', event: { kind: 'cancelled' } })
  })

  test('a running tool: its abortSignal aborts, the next step (and its tool) never runs', async ({
    assert,
  }) => {
    const seen = { toolAborted: false, slow: 0, after: 0, calls: 0 }
    const model = new MockLanguageModelV3({
      modelId: 'tools',
      doStream: async () => {
        seen.calls++
        const chunks = [
          { type: 'stream-start', warnings: [] } as LanguageModelV3StreamPart,
          ...text('Looking. '),
          ...toolCall('call_1', 'slow', {}),
          ...finish('tool-calls'),
        ]
        return {
          stream: new ReadableStream({
            start(controller) {
              for (const chunk of chunks) controller.enqueue(chunk)
              controller.close()
            },
          }),
        }
      },
    })
    const tools = {
      slow: tool({
        description: 'A slow lookup',
        inputSchema: objectSchema,
        execute: async (_input, { abortSignal }) => {
          seen.slow++
          await new Promise<void>((resolve) => {
            abortSignal?.addEventListener('abort', () => {
              seen.toolAborted = true
              resolve()
            })
          })
          return { done: false }
        },
      }),
      after: tool({
        description: 'What the next step would call',
        inputSchema: objectSchema,
        execute: async () => {
          seen.after++
          return {}
        },
      }),
    }
    const stack = await setupRunner(aiSdkAgent({ model, tools }))
    const id = runId('aisdk-tool')
    await start(stack, id)
    await waitUntil(() => seen.slow === 1, 'the tool running')
    const outcome = await stack.control.stop(id, asAlice)
    assert.equal(outcome.status, 'cancelled')
    await stack.driver.settled()
    assert.isTrue(seen.toolAborted)
    assert.deepEqual([seen.calls, seen.slow, seen.after], [1, 1, 0])
    const frames = await stored(stack, id)
    assert.equal(textOf(frames), 'Looking. ')
    assert.deepEqual(frames.at(-1), { t: 'event', event: { kind: 'cancelled' } })
  })
})
