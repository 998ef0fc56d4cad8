import type { Database } from '@adonisjs/lucid/database'
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
 * The email scenario's model: the SDK's own `ScriptedModel`, one per call, whose one step is
 * decided from the prompt it is sent (stateless: the same object answers the same way after a
 * restart or in another process).
 */
export class EmailModel implements Model {
  respond(request: ModelRequest) {
    const items: Item[] =
      typeof request.input === 'string'
        ? [{ role: 'user', content: request.input }]
        : (request.input as Item[])
    const newest = items.at(-1) ?? {}
    if (newest.type === 'function_call_result' && newest.name === 'send_email') {
      let sent = false
      try {
        sent = JSON.parse(resultText(newest))?.sent === true
      } catch {}
      return [assistantMessage(sent ? 'Sent.' : 'Not sent.')]
    }
    const said = items.filter(isUser).map(userText)
    if (isUser(newest) && userText(newest).includes('weekly report')) {
      return [
        assistantMessage('I will send it. '),
        functionCall(
          'send_email',
          { to: 'team@example.com' },
          // One call id per turn of the thread: the prompt's count of person messages.
          { callId: `call_send_${said.length}` }
        ),
      ]
    }
    return [assistantMessage(`You asked: ${said.join(' / ')}`)]
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
export async function emailAgent(options: {
  db: Database
  /** Called once per run of the send_email tool, with its input. */
  onSend: (input: { to: string }) => void
}): Promise<AgentRunner> {
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
