import { MemorySaver } from '@langchain/langgraph'
import { emailGraph, emailReply } from '../../demo/agents/langgraph.js'
import { PromptedChatModel } from '../../demo/agents/langgraph_model.js'
import type { setupRunner } from './parking.js'
import { runId } from './sink.js'

export const alice = { id: 'alice' }
export const decider = { principal: alice, via: 'api' }

export const kinds = (frames: any[]) =>
  frames.map((f) => (f.t === 'event' ? f.event.kind : f.t)).filter((k) => k !== 'text')
export const events = (frames: any[], kind: string) =>
  frames.filter((f) => f.t === 'event' && f.event.kind === kind).map((f) => f.event)

/** The email graph on an in-memory checkpointer, its model and what send_email sent. */
export function email() {
  const sent: unknown[] = []
  const model = new PromptedChatModel(emailReply)
  const checkpointer = new MemorySaver()
  const graph = emailGraph({ checkpointer, onSend: (input) => sent.push(input), model })
  return { sent, model, checkpointer, graph }
}

/** Start a run on the driver and wait for its first segment's outcome. */
export async function started(
  stack: Awaited<ReturnType<typeof setupRunner>>,
  message: string,
  threadId?: string
) {
  const id = runId('lg')
  const outcome = await (
    await stack.driver.start({
      runId: id,
      ...(threadId ? { threadId } : {}),
      input: { message, context: [] },
      principal: alice,
    })
  ).done
  return { id, outcome }
}
