import type { Database } from '@adonisjs/lucid/database'
import { Mastra } from '@mastra/core'
import { Agent, type AgentConfig } from '@mastra/core/agent'
import { createTool } from '@mastra/core/tools'
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { z } from 'zod'
import { lucidMastraStore, mastraAgent } from '../../src/runners/mastra/index.js'
import type { MastraAgentOptions } from '../../src/runners/mastra/agent.js'

type Part = LanguageModelV4StreamPart

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

export const words = (text: string, id = 't'): Part[] => [
  { type: 'text-start', id },
  { type: 'text-delta', id, delta: text },
  { type: 'text-end', id },
]
export const call = (toolCallId: string, toolName: string, input: unknown): Part => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
})
export const finish = (unified: 'stop' | 'tool-calls' = 'stop'): Part => ({
  type: 'finish',
  finishReason: { unified, raw: unified },
  usage,
})

/**
 * A Mastra agent on the test's database (`lucidMastraStore`), its model the AI SDK's test model
 * answering with `answer(prompt)` (stateless: a second agent made the same way carries on), its
 * `send_email` tool needing approval and recording every input it ran with.
 */
export function mailer(
  db: Database,
  answer: (prompt: LanguageModelV4CallOptions['prompt']) => Part[],
  runner: Partial<MastraAgentOptions> = {},
  agentId = 'mailer',
  /** Tools the agent does not have (an agent changed since a run paused). */
  without: string[] = []
) {
  const ran: unknown[] = []
  const errors: unknown[] = []
  const prompts: LanguageModelV4CallOptions['prompt'][] = []
  const model = new MockLanguageModelV4({
    modelId: 'scripted',
    doStream: async ({ prompt }) => {
      prompts.push(prompt)
      return {
        stream: simulateReadableStream({
          chunks: [{ type: 'stream-start', warnings: [] } as Part, ...answer(prompt)],
        }),
      }
    },
  })
  const sendEmail = createTool({
    id: 'send_email',
    description: 'Send an email',
    inputSchema: z.object({ to: z.string() }),
    requireApproval: true,
    execute: async (input) => {
      ran.push(input)
      return { sent: true }
    },
  })
  const search = createTool({
    id: 'search',
    description: 'Search',
    inputSchema: z.object({ q: z.string() }),
    execute: async () => ({ found: 42 }),
  })
  const agent = new Agent({
    id: agentId,
    name: 'Mailer',
    instructions: 'Send what you are asked to.',
    // Mastra types its models against its own copy of the AI SDK's provider types.
    model: model as unknown as AgentConfig['model'],
    tools: Object.fromEntries(
      Object.entries({ send_email: sendEmail, search }).filter(([name]) => !without.includes(name))
    ),
  })
  const mastra = new Mastra({
    agents: { [agentId]: agent },
    storage: lucidMastraStore({ db }),
    logger: false,
  })
  const options: MastraAgentOptions = {
    agent: mastra.getAgent(agentId),
    onError: (error) => errors.push(error),
    ...runner,
  }
  return { runner: mastraAgent(options), ran, errors, prompts, model }
}

/** The newest message of a prompt, when it is a tool's result: that result's output. */
export function lastResult(prompt: LanguageModelV4CallOptions['prompt']) {
  const last = prompt.at(-1)
  if (last?.role !== 'tool') return undefined
  const result = last.content.findLast((part) => part.type === 'tool-result')
  return result?.output as { type: string; value?: unknown } | undefined
}

/** The text of every user message of a prompt, oldest first. */
export function userTexts(prompt: LanguageModelV4CallOptions['prompt']) {
  return prompt
    .filter((message) => message.role === 'user')
    .map((message) =>
      message.content
        .filter((part) => part.type === 'text')
        .map((part) => part.text)
        .join('')
    )
}
