/**
 * The email scenario's model for the agents that take an AI SDK model (`aiSdkAgent`, Mastra, a UI
 * message stream producer): the AI SDK's own test model, deciding each answer from the prompt it
 * is sent (demo/agents/scenario.ts; stateless, no network). `emailModel()` is the V3 model;
 * `emailModelV4()` the V4 one (Mastra).
 */
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV3, MockLanguageModelV4 } from 'ai/test'
import type { LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { answerTo } from './scenario.js'

type Part = LanguageModelV3StreamPart

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** The prompt as the scenario reads it: the person's texts, and the tool's result if newest. */
function read(prompt: LanguageModelV3Prompt) {
  const said = prompt
    .filter((message) => message.role === 'user')
    .map((message) =>
      message.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
    )
  const last = prompt.at(-1)
  const result =
    last?.role === 'tool' ? last.content.findLast((p) => p.type === 'tool-result') : undefined
  // A denial or a decline reaches the model as another output (the SDK's, or Mastra's text).
  const output = result?.output as { type: string; value?: unknown } | undefined
  return {
    said,
    toolResult: result
      ? { sent: output?.type === 'json' && (output.value as { sent?: boolean })?.sent === true }
      : undefined,
  }
}

/** What the model streams for `prompt`: its text, then its call of `send_email` if it makes one. */
function partsFor(prompt: LanguageModelV3Prompt): Part[] {
  const answer = answerTo(read(prompt))
  const parts: Part[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: answer.text },
    { type: 'text-end', id: 't' },
  ]
  if (answer.call) {
    const input = JSON.stringify(answer.call.input)
    const toolCallId = answer.call.id
    parts.push(
      { type: 'tool-input-start', id: toolCallId, toolName: 'send_email' },
      { type: 'tool-input-delta', id: toolCallId, delta: input },
      { type: 'tool-input-end', id: toolCallId },
      { type: 'tool-call', toolCallId, toolName: 'send_email', input }
    )
  }
  const reason = answer.call ? 'tool-calls' : 'stop'
  parts.push({ type: 'finish', finishReason: { unified: reason, raw: reason }, usage })
  return parts
}

export function emailModel() {
  return new MockLanguageModelV3({
    modelId: 'email-scenario',
    doStream: async ({ prompt }) => ({
      stream: simulateReadableStream({ chunks: partsFor(prompt) }),
    }),
  })
}

export function emailModelV4() {
  return new MockLanguageModelV4({
    modelId: 'email-scenario',
    // The V4 prompt and stream parts the scenario reads and writes are the V3 ones.
    doStream: async ({ prompt }) => ({
      stream: simulateReadableStream({
        chunks: partsFor(prompt as unknown as LanguageModelV3Prompt) as never[],
      }),
    }),
  })
}
