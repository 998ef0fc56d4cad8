import { simulateReadableStream } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider'

/** One model response, as the provider streams it. */
export type Turn = LanguageModelV3StreamPart[]

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** A response's closing parts: `finish` with a reason and usage. */
export const finish = (unified: 'stop' | 'tool-calls' = 'stop'): Turn => [
  { type: 'finish', finishReason: { unified, raw: unified }, usage },
]

/** Streamed text, in word-sized deltas, as one text block. */
export const text = (value: string, id = 't1'): Turn => [
  { type: 'text-start', id },
  ...value.split(/(?<= )/).map((delta) => ({ type: 'text-delta' as const, id, delta })),
  { type: 'text-end', id },
]

/** A tool call whose input streams in two deltas first. */
export const toolCall = (toolCallId: string, toolName: string, input: unknown): Turn => {
  const json = JSON.stringify(input)
  const half = Math.floor(json.length / 2)
  return [
    { type: 'tool-input-start', id: toolCallId, toolName },
    { type: 'tool-input-delta', id: toolCallId, delta: json.slice(0, half) },
    { type: 'tool-input-delta', id: toolCallId, delta: json.slice(half) },
    { type: 'tool-input-end', id: toolCallId },
    { type: 'tool-call', toolCallId, toolName, input: json },
  ]
}

/**
 * The AI SDK's own test model playing `turns` in order, one per model call (a call past the
 * script fails the test loudly). `doStreamCalls` records every prompt it was sent.
 */
export function scriptedModel(turns: Turn[]) {
  let next = 0
  const model: MockLanguageModelV3 = new MockLanguageModelV3({
    modelId: 'scripted',
    doStream: async () => {
      const chunks = turns[next++]
      if (!chunks)
        throw new Error(`the model was called ${next} times; the script has ${turns.length}`)
      return {
        stream: simulateReadableStream({
          chunks: [{ type: 'stream-start', warnings: [] } as LanguageModelV3StreamPart, ...chunks],
        }),
      }
    },
  })
  return model
}

/**
 * The approval scenario both replicas of the kill -9 test run: the model says a sentence and
 * calls `send_email` (needs approval); after the approval it says "Sent.". The tool appends one
 * line `<pid> <input>` to `log` per run, so a test counts runs across processes.
 */
export async function emailScenario(log: string, turns: 'both' | 'after' = 'both') {
  const { appendFileSync } = await import('node:fs')
  const { tool, jsonSchema } = await import('ai')
  const { aiSdkAgent } = await import('../../src/runners/ai_sdk/index.js')
  const first: Turn = [
    ...text('I will send it. '),
    ...toolCall('call_9', 'send_email', { to: 'team@example.com' }),
    ...finish('tool-calls'),
  ]
  const second: Turn = [...text('Sent.'), ...finish()]
  const model = scriptedModel(turns === 'both' ? [first, second] : [second])
  const sendEmail = tool({
    inputSchema: jsonSchema<{ to: string }>({
      type: 'object',
      properties: { to: { type: 'string' } },
    }),
    needsApproval: true,
    execute: async (input) => {
      appendFileSync(log, `${process.pid} ${JSON.stringify(input)}\n`)
      return { sent: true }
    },
  })
  return { model, runner: aiSdkAgent({ model, tools: { send_email: sendEmail } }) }
}
