/**
 * The email scenario (demo/agents/README.md) as an AI SDK 7 agent run by `aiSdkAgent`: the AI
 * SDK's own test model (`MockLanguageModelV3`) decides each answer from the prompt it is sent, so
 * the same agent carries on after a restart or on another process.
 */
import { jsonSchema, tool } from 'ai'
import { aiSdkAgent } from '../../src/runners/ai_sdk/index.js'
import { emailModel } from './ai_sdk_model.js'
import type { EmailAgentOptions } from './scenario.js'

export async function emailAgent({ onSend }: EmailAgentOptions) {
  const model = emailModel()
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
