import {
  convertToModelMessages,
  jsonSchema,
  simulateReadableStream,
  stepCountIs,
  streamText,
  tool,
} from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider'
import type { AgentRunner } from '../../src/runner/contract.js'
import { uiMessageStreamAgent } from '../../src/runners/ui_message_stream/index.js'
import { answerTo, type EmailAgentOptions } from './scenario.js'

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** The prompt as the scenario reads it: the person's texts, and the newest message. */
function read(prompt: LanguageModelV3Prompt) {
  const said = prompt
    .filter((message) => message.role === 'user')
    .map((message) =>
      message.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
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

/**
 * The email scenario's model (demo/agents/scenario.ts; the AI SDK's own test model, no
 * network), deciding each answer from the prompt it is sent (stateless).
 */
export function emailModel() {
  return new MockLanguageModelV3({
    modelId: 'email-scenario',
    doStream: async ({ prompt }) => {
      const answer = answerTo(read(prompt))
      const parts: LanguageModelV3StreamPart[] = [
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
      return {
        stream: simulateReadableStream({
          chunks: [{ type: 'stream-start', warnings: [] } as LanguageModelV3StreamPart, ...parts],
        }),
      }
    },
  })
}

/**
 * The email scenario as a UI message stream producer: `streamText` on the messages it is
 * given (`convertToModelMessages`, as an AI SDK chat route does), its `toUIMessageStream()`.
 */
export async function emailAgent(options: EmailAgentOptions): Promise<AgentRunner> {
  const model = emailModel()
  const sendEmail = tool({
    description: 'Send an email',
    inputSchema: jsonSchema<{ to: string }>({
      type: 'object',
      properties: { to: { type: 'string' } },
      required: ['to'],
    }),
    needsApproval: true,
    execute: async (input) => {
      options.onSend(input)
      return { sent: true }
    },
  })
  return uiMessageStreamAgent({
    stream: async ({ messages, signal }) =>
      streamText({
        model,
        tools: { send_email: sendEmail },
        messages: await convertToModelMessages(messages),
        stopWhen: stepCountIs(5),
        abortSignal: signal,
      }).toUIMessageStream(),
  })
}
