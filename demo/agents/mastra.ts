/**
 * The email scenario (demo/agents/scenario.ts) as a Mastra `Agent` run by `mastraAgent`: the AI
 * SDK's own test model (`MockLanguageModelV4`, which Mastra accepts as any AI SDK model) decides
 * each answer from the prompt it is sent, and Mastra keeps its paused runs in the app's database
 * (`lucidMastraStore`), so the same agent carries on after a restart or on another process.
 */
import { Mastra } from '@mastra/core'
import { Agent, type AgentConfig } from '@mastra/core/agent'
import { createTool } from '@mastra/core/tools'
import { z } from 'zod'
import { lucidMastraStore, mastraAgent } from '../../src/runners/mastra/index.js'
import { emailModelV4 } from './ai_sdk_model.js'
import type { EmailAgentOptions } from './scenario.js'

export async function emailAgent({ db, onSend }: EmailAgentOptions) {
  const model = emailModelV4()
  const sendEmail = createTool({
    id: 'send_email',
    description: 'Send an email (a person approves it first)',
    inputSchema: z.object({ to: z.string() }),
    requireApproval: true,
    execute: async (input) => {
      onSend(input)
      return { sent: true }
    },
  })
  const agent = new Agent({
    id: 'mailer',
    name: 'Mailer',
    instructions: 'You send the weekly report when asked.',
    // Mastra types its models against its own copy of the AI SDK's provider types.
    model: model as unknown as AgentConfig['model'],
    tools: { send_email: sendEmail },
  })
  const mastra = new Mastra({
    agents: { mailer: agent },
    storage: lucidMastraStore({ db }),
    logger: false,
  })
  return mastraAgent({ agent: mastra.getAgent('mailer') })
}
