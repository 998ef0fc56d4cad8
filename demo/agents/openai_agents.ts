/**
 * The email scenario (demo/agents/scenario.ts) as an OpenAI Agents SDK `Agent` run by
 * `openAiAgent`: `send_email` needs approval (`needsApproval: true`), the model is the SDK's own
 * `ScriptedModel` answering from the prompt.
 */
import { Agent, setTracingDisabled, tool, type Model, type ModelRequest } from '@openai/agents'
import {
  ScriptedModel,
  assistantMessage,
  functionCall,
  modelResponder,
} from '@openai/agents/testing'
import { z } from 'zod'
import type { AgentRunner } from '../../src/runner/contract.js'
import { openAiAgent } from '../../src/runners/openai_agents/index.js'
import { answerTo, type EmailAgentOptions } from './scenario.js'

// The scripted model sends nothing anywhere: no traces to export either.
setTracingDisabled(true)

type Item = Record<string, any>

/** The text of a user message item (its `input_text` parts; the client's context block left out). */
function userText(item: Item): string {
  if (typeof item.content === 'string') return item.content
  return (item.content as Item[])
    .filter((part) => part.type === 'input_text' && !part.text.startsWith('Context the client'))
    .map((part) => part.text)
    .join('')
}

const isUser = (item: Item) => item.role === 'user'

/** A tool result's text (the SDK gives the model `{ type: 'text', text }` or a string). */
function resultText(item: Item): string {
  const output = item.output
  if (typeof output === 'string') return output
  if (output && typeof output.text === 'string') return output.text
  return JSON.stringify(output)
}

/**
 * The email scenario's model (demo/agents/scenario.ts): the SDK's own `ScriptedModel`, one per
 * call, whose one step is decided from the prompt it is sent (stateless: the same object answers
 * the same way after a restart or in another process).
 */
export class EmailModel implements Model {
  respond(request: ModelRequest) {
    const items: Item[] =
      typeof request.input === 'string'
        ? [{ role: 'user', content: request.input }]
        : (request.input as Item[])
    const newest = items.at(-1) ?? {}
    let toolResult: { sent: boolean } | undefined
    if (newest.type === 'function_call_result' && newest.name === 'send_email') {
      // The SDK hands the model the tool's result as JSON text, a rejection as its message.
      let sent = false
      try {
        sent = JSON.parse(resultText(newest))?.sent === true
      } catch {}
      toolResult = { sent }
    }
    const answer = answerTo({ said: items.filter(isUser).map(userText), toolResult })
    return [
      assistantMessage(answer.text),
      ...(answer.call
        ? [functionCall('send_email', answer.call.input, { callId: answer.call.id })]
        : []),
    ]
  }

  getResponse(request: ModelRequest) {
    return new ScriptedModel([modelResponder(() => this.respond(request))]).getResponse(request)
  }

  getStreamedResponse(request: ModelRequest) {
    return new ScriptedModel([modelResponder(() => this.respond(request))]).getStreamedResponse(
      request
    )
  }
}

/** The email scenario played by the SDK's own scripted model (no network). */
export async function emailAgent(options: EmailAgentOptions): Promise<AgentRunner> {
  const sendEmail = tool({
    name: 'send_email',
    description: 'Send the weekly report by email',
    parameters: z.object({ to: z.string() }),
    needsApproval: true,
    execute: async (input) => {
      options.onSend(input)
      return { sent: true }
    },
  })
  const agent = new Agent({
    name: 'mailer',
    instructions: 'You prepare and send the weekly report.',
    model: new EmailModel(),
    tools: [sendEmail],
  })
  return openAiAgent({ agent })
}
