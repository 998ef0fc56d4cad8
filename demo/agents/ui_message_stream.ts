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
import type { Database } from '@adonisjs/lucid/database'
import type { AgentRunner } from '../../src/runner/contract.js'
import { uiMessageStreamAgent } from '../../src/runners/ui_message_stream/index.js'

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** What a prompt's user message says (its text parts). */
const userText = (message: LanguageModelV3Prompt[number]) =>
  message.role === 'user'
    ? message.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
    : ''

/**
 * The email scenario's model (the AI SDK's own test model, no network), decided from the prompt
 * it is sent (stateless): the newest message is send_email's result: "Sent." (it ran) or "Not
 * sent." (denied); the newest person's message asks for the weekly report: "I will send it. "
 * and a `send_email` call; otherwise "You asked: " and every person's message.
 */
export function emailModel() {
  return new MockLanguageModelV3({
    modelId: 'email-scenario',
    doStream: async ({ prompt }) => {
      const last = prompt.at(-1)!
      const people = prompt.filter((m) => m.role === 'user')
      const parts: LanguageModelV3StreamPart[] = []
      const say = (text: string) =>
        parts.push(
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: text },
          { type: 'text-end', id: 't' }
        )
      let reason: 'stop' | 'tool-calls' = 'stop'
      if (last.role === 'tool') {
        const result = last.content.find((part) => part.type === 'tool-result')
        say(result && result.output.type !== 'execution-denied' ? 'Sent.' : 'Not sent.')
      } else if (userText(last).includes('weekly report')) {
        say('I will send it. ')
        const toolCallId = `call_${people.length}`
        const input = JSON.stringify({ to: 'team@example.com' })
        parts.push(
          { type: 'tool-input-start', id: toolCallId, toolName: 'send_email' },
          { type: 'tool-input-delta', id: toolCallId, delta: input },
          { type: 'tool-input-end', id: toolCallId },
          { type: 'tool-call', toolCallId, toolName: 'send_email', input }
        )
        reason = 'tool-calls'
      } else {
        say(`You asked: ${people.map(userText).join(' / ')}`)
      }
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
export async function emailAgent(options: {
  db: Database
  onSend: (input: { to: string }) => void
}): Promise<AgentRunner> {
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
