/**
 * The email scenario (demo/agents/scenario.ts) as a Mastra `Agent` run by `mastraAgent`: the AI
 * SDK's own test model (`MockLanguageModelV4`, which Mastra accepts as any AI SDK model) decides
 * each answer from the prompt it is sent, and Mastra keeps its paused runs in the app's database
 * (`lucidMastraStore`), so the same agent carries on after a restart or on another process.
 */
import { Mastra } from '@mastra/core'
import { Agent, type AgentConfig } from '@mastra/core/agent'
import { createTool } from '@mastra/core/tools'
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import type { LanguageModelV4Prompt, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { z } from 'zod'
import { lucidMastraStore, mastraAgent } from '../../src/runners/mastra/index.js'
import { answerTo, type EmailAgentOptions } from './scenario.js'

type Part = LanguageModelV4StreamPart

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** The prompt as the scenario reads it: the person's texts, and the newest message. */
function read(prompt: LanguageModelV4Prompt) {
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
  // Mastra hands the model a declined call as a text result (the decline's reason).
  const output = result?.output as { type: string; value?: unknown } | undefined
  return {
    said,
    toolResult: result
      ? { sent: output?.type === 'json' && (output.value as { sent?: boolean })?.sent === true }
      : undefined,
  }
}

function parts(prompt: LanguageModelV4Prompt): Part[] {
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

export async function emailAgent({ db, onSend }: EmailAgentOptions) {
  const model = new MockLanguageModelV4({
    modelId: 'scripted-email',
    doStream: async ({ prompt }) => ({
      stream: simulateReadableStream({
        chunks: [{ type: 'stream-start', warnings: [] } as Part, ...parts(prompt)],
      }),
    }),
  })
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
