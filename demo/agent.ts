/**
 * The demo's agent, written with the AI SDK 7: a `search` tool, a `send_email` tool that needs
 * approval, and a question set through `askTool()`, run by `aiSdkAgent` from
 * `adonis-agent-stream/ai-sdk`. Offline it talks to a scripted mock model (the AI SDK's own
 * `MockLanguageModelV3`) that plays the demo's scenario; with `OPENAI_API_KEY` set it talks to
 * a real model through `@ai-sdk/openai` (`OPENAI_MODEL`, default `gpt-4o-mini`).
 */
import { jsonSchema, simulateReadableStream, tool, type LanguageModel } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { aiSdkAgent, askTool } from '../src/runners/ai_sdk/index.js'

const SYSTEM = `You are the demo agent of adonis-agent-stream. When asked for the weekly report:
say one short sentence, call search with q "weekly numbers", state the revenue, call send_email
to team@example.com (a person approves it), then call ask with two questions (format: pdf or csv,
default pdf; a free-text note), then confirm the chosen format and say "All done."`

const usage = {
  inputTokens: { total: 20, noCache: 20, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
}

type Part = LanguageModelV3StreamPart

const words = (id: string, text: string): Part[] => [
  { type: 'text-start', id },
  ...text.split(/(?<= )/).map((delta) => ({ type: 'text-delta' as const, id, delta })),
  { type: 'text-end', id },
]
const call = (toolCallId: string, toolName: string, input: unknown): Part => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
})
const finish = (unified: 'stop' | 'tool-calls'): Part => ({
  type: 'finish',
  finishReason: { unified, raw: unified },
  usage,
})

/** What the scripted model says next, read off the conversation it is sent (stateless). */
function nextTurn(prompt: LanguageModelV3Prompt): Part[] {
  const last = prompt.at(-1)
  const result =
    last?.role === 'tool' ? last.content.findLast((p) => p.type === 'tool-result') : undefined
  if (!result) {
    return [
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: 'The user wants the weekly numbers.' },
      { type: 'reasoning-end', id: 'r' },
      ...words('t', 'Let me look at this week. '),
      call('call_search', 'search', { q: 'weekly numbers' }),
      finish('tool-calls'),
    ]
  }
  if (result.toolName === 'search') {
    return [
      ...words('t', 'Revenue was 42. '),
      call('call_send', 'send_email', { to: 'team@example.com' }),
      finish('tool-calls'),
    ]
  }
  if (result.toolName === 'send_email') {
    const denied = result.output.type === 'execution-denied'
    return [
      ...words('t', denied ? 'Not sent. ' : 'Sent. '),
      call('call_ask', 'ask', {
        preamble: 'Two quick questions.',
        questions: [
          {
            id: 'format',
            prompt: 'Which format?',
            options: [
              { value: 'pdf', label: 'PDF' },
              { value: 'csv', label: 'CSV' },
            ],
            defaults: ['pdf'],
          },
          { id: 'note', prompt: 'Anything to add?', options: [], allowFreeText: true },
        ],
      }),
      finish('tool-calls'),
    ]
  }
  const reply = (result.output.type === 'json' ? result.output.value : null) as {
    answers?: Record<string, string[]>
    skipped?: boolean
  } | null
  const said = reply?.skipped
    ? 'Skipped: using defaults. '
    : `Format: ${(reply?.answers?.format ?? []).join(',')}. `
  return [...words('t', `${said}All done.`), finish('stop')]
}

/** The AI SDK's test model playing the demo's scenario at `tokensPerSecond` parts per second. */
export function scriptedDemoModel(tokensPerSecond = 30) {
  const delay = tokensPerSecond > 0 ? 1000 / tokensPerSecond : null
  return new MockLanguageModelV3({
    provider: 'demo',
    modelId: 'scripted-demo',
    doStream: async ({ prompt }) => ({
      stream: simulateReadableStream({
        chunks: [{ type: 'stream-start', warnings: [] } as Part, ...nextTurn(prompt)],
        initialDelayInMs: delay,
        chunkDelayInMs: delay,
      }),
    }),
  })
}

/** The real model when `OPENAI_API_KEY` is set, else `null`. */
export async function openAiModel(): Promise<LanguageModel | null> {
  if (!process.env.OPENAI_API_KEY) return null
  const { openai } = await import('@ai-sdk/openai')
  return openai(process.env.OPENAI_MODEL ?? 'gpt-4o-mini')
}

/** The demo's runner on `model`. */
export function demoAgent(model: LanguageModel) {
  return aiSdkAgent({
    model,
    system: SYSTEM,
    tools: {
      search: tool({
        description: 'Search the company numbers.',
        inputSchema: jsonSchema<{ q: string }>({
          type: 'object',
          properties: { q: { type: 'string' } },
          required: ['q'],
        }),
        execute: async () => ({ revenue: 42 }),
      }),
      send_email: tool({
        description: 'Send an email (a person approves it first).',
        inputSchema: jsonSchema<{ to: string }>({
          type: 'object',
          properties: { to: { type: 'string' } },
          required: ['to'],
        }),
        needsApproval: true,
        execute: async (input) => ({ sent: true, input }),
      }),
      ask: askTool(),
    },
    approval: {
      confirmation: () => ({ title: 'Send the weekly report?', description: 'Emails the team.' }),
    },
  })
}
