import { AbstractAgent } from '@ag-ui/client'
import { EventType, type BaseEvent, type Message, type RunAgentInput } from '@ag-ui/core'
import { Observable } from 'rxjs'
import type { AgentRunner } from '../../src/runner/contract.js'
import { aguiAgent } from '../../src/runners/agui_agent/index.js'
import { answerTo, type EmailAgentOptions } from './scenario.js'

const textOf = (message: Message) =>
  typeof message.content === 'string'
    ? message.content
    : Array.isArray(message.content)
      ? message.content.map((part: any) => (part.type === 'text' ? part.text : '')).join('')
      : ''

/**
 * The email scenario (demo/agents/scenario.ts) as an AG-UI agent of its own (no model, no
 * network), decided from the input it is sent (stateless: any clone, any process): a request
 * for the weekly report calls `send_email` and finishes with a `tool_call` interrupt; the resume
 * runs the tool when approved ("Sent.") or not ("Not sent."), as an AG-UI agent does on
 * `resume[]`; anything else echoes every person's message ("You asked: ...").
 */
export class EmailAgent extends AbstractAgent {
  constructor(readonly onSend: (input: { to: string }) => void) {
    super()
  }

  /** The events of one run, for this class's `run` and for a server that streams them. */
  events(input: RunAgentInput): BaseEvent[] {
    const { threadId, runId } = input
    const out: BaseEvent[] = [{ type: EventType.RUN_STARTED, threadId, runId } as BaseEvent]
    const say = (id: string, text: string) =>
      out.push(
        { type: EventType.TEXT_MESSAGE_START, messageId: id, role: 'assistant' } as BaseEvent,
        { type: EventType.TEXT_MESSAGE_CONTENT, messageId: id, delta: text } as BaseEvent,
        { type: EventType.TEXT_MESSAGE_END, messageId: id } as BaseEvent
      )
    const entry = input.resume?.[0]
    if (entry) {
      const toolCallId = entry.interruptId.replace(/^int-/, '')
      const call = input.messages
        .flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))
        .find((c) => c.id === toolCallId)
      const payload = entry.payload as { approved?: boolean; editedArgs?: { to: string } }
      if (entry.status === 'resolved' && payload?.approved && call) {
        const args = payload.editedArgs ?? JSON.parse(call.function.arguments)
        this.onSend(args)
        out.push({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `res-${runId}`,
          toolCallId,
          content: JSON.stringify({ sent: true }),
          role: 'tool',
        } as BaseEvent)
      }
      const sent = entry.status === 'resolved' && payload?.approved === true && call !== undefined
      say(`msg-${runId}`, answerTo({ said: [], toolResult: { sent } }).text)
      out.push({ type: EventType.RUN_FINISHED, threadId, runId } as BaseEvent)
      return out
    }
    const answer = answerTo({
      said: input.messages.filter((m) => m.role === 'user').map(textOf),
    })
    say(`msg-${runId}`, answer.text)
    if (!answer.call) {
      out.push({ type: EventType.RUN_FINISHED, threadId, runId } as BaseEvent)
      return out
    }
    // The call's id is made unique in the thread by the run's (the scenario numbers it per turn).
    const toolCallId = `${answer.call.id}_${runId}`
    out.push(
      { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: 'send_email' } as BaseEvent,
      {
        type: EventType.TOOL_CALL_ARGS,
        toolCallId,
        delta: JSON.stringify(answer.call.input),
      } as BaseEvent,
      { type: EventType.TOOL_CALL_END, toolCallId } as BaseEvent,
      {
        type: EventType.RUN_FINISHED,
        threadId,
        runId,
        outcome: {
          type: 'interrupt',
          interrupts: [
            {
              id: `int-${toolCallId}`,
              reason: 'tool_call',
              toolCallId,
              message: 'Send the email?',
            },
          ],
        },
      } as BaseEvent
    )
    return out
  }

  run(input: RunAgentInput): Observable<BaseEvent> {
    return new Observable<BaseEvent>((subscriber) => {
      for (const event of this.events(input)) subscriber.next(event)
      subscriber.complete()
    })
  }

  clone(): EmailAgent {
    const copy = super.clone() as EmailAgent
    ;(copy as { onSend: unknown }).onSend = this.onSend
    return copy
  }
}

/** The email scenario (docs: the runner conformance suite) as an AG-UI agent runner. */
export async function emailAgent(options: EmailAgentOptions): Promise<AgentRunner> {
  return aguiAgent({ agent: new EmailAgent(options.onSend) })
}
