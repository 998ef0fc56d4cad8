/**
 * The email scenario (demo/agents/README.md) as an AI SDK 7 agent run by `aiSdkAgent`: the AI
 * SDK's own test model (`MockLanguageModelV3`) decides each answer from the prompt it is sent, so
 * the same agent carries on after a restart or on another process.
 */
import { jsonSchema, simulateReadableStream, tool } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { aiSdkAgent } from '../../src/runners/ai_sdk/index.js'
import { answerTo, type EmailAgentOptions } from './scenario.js'

type Part = LanguageModelV3StreamPart

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** The prompt as the scenario reads it: the person's texts, and the newest message. */
function read(prompt: LanguageModelV3Prompt) {
  const said = prompt
    .filter((message) => message.role === 'user')
    .map((message) =>
      message.content
        .filter((part) => part.type === 'text')
        .map((part) => part.text)
        .join('')
    )
  const last = prompt.at(-1)
  const result =
    last?.role === 'tool' ? last.content.findLast((p) => p.type === 'tool-result') : undefined
  const output = result?.output as { type: string; value?: unknown } | undefined
  return {
    said,
    toolResult: result
      ? { sent: output?.type === 'json' && (output.value as { sent?: boolean })?.sent === true }
      : undefined,
  }
}

function parts(prompt: LanguageModelV3Prompt): Part[] {
  const answer = answerTo(read(prompt))
  const text: Part[] = [
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: answer.text },
    { type: 'text-end', id: 't' },
  ]
  if (!answer.call) {
    return [...text, { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage }]
  }
  return [
    ...text,
    {
      type: 'tool-call',
      toolCallId: answer.call.id,
      toolName: 'send_email',
      input: JSON.stringify(answer.call.input),
    },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool-calls' }, usage },
  ]
}

export async function emailAgent({ onSend }: EmailAgentOptions) {
  const model = new MockLanguageModelV3({
    modelId: 'scripted-email',
    doStream: async ({ prompt }) => ({
      stream: simulateReadableStream({
        chunks: [{ type: 'stream-start', warnings: [] } as Part, ...parts(prompt)],
      }),
    }),
  })
  const sendEmail = tool({
    description: 'Send an email (a person approves it first)',
    inputSchema: jsonSchema<{ to: string }>({
      type: 'object',
      properties: { to: { type: 'string' } },
      required: ['to'],
    }),
    needsApproval: true,
    execute: async (input) => {
      onSend(input)
      return { sent: true }
    },
  })
  return aiSdkAgent({ model, tools: { send_email: sendEmail } })
}
