import { convertToModelMessages, jsonSchema, stepCountIs, streamText, tool } from 'ai'
import type { AgentRunner } from '../../src/runner/contract.js'
import { uiMessageStreamAgent } from '../../src/runners/ui_message_stream/index.js'
import { emailModel } from './ai_sdk_model.js'
import type { EmailAgentOptions } from './scenario.js'

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
