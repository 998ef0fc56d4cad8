import type { Database } from '@adonisjs/lucid/database'
import { HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import {
  END,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
  type BaseCheckpointSaver,
} from '@langchain/langgraph'
import { ToolNode } from '@langchain/langgraph/prebuilt'
import { z } from 'zod'
import type { AgentRunner } from '../../src/runner/contract.js'
import { langGraphAgent, requestApproval } from '../../src/runners/langgraph/index.js'
import { PromptedChatModel, type Reply } from './langgraph_model.js'

/** The text of a person's message. */
const said = (message: BaseMessage) => message.text

/**
 * The email scenario, decided from the prompt (docs/runners/langgraph.md): "weekly report" ->
 * "I will send it. " and a `send_email` call; send_email's result -> "Sent." or "Not sent.";
 * anything else -> "You asked: " and every person message of the prompt, oldest first.
 */
export function emailReply(messages: BaseMessage[]): Reply {
  const last = messages.at(-1)
  if (last && ToolMessage.isInstance(last)) {
    return { text: /"sent":true/.test(last.text) ? 'Sent.' : 'Not sent.' }
  }
  if (last && HumanMessage.isInstance(last) && said(last).includes('weekly report')) {
    return {
      text: 'I will send it. ',
      toolCalls: [
        { id: `call_${messages.length}`, name: 'send_email', args: { to: 'team@example.com' } },
      ],
    }
  }
  const asked = messages.filter((m) => HumanMessage.isInstance(m)).map(said)
  return { text: `You asked: ${asked.join(' / ')}` }
}

/**
 * The email graph: an `agent` node calling the model, a `tools` node (LangGraph's `ToolNode`)
 * whose `send_email` asks a person first (`requestApproval`, LangGraph's `interrupt()`), then
 * calls `onSend(input)` and returns `{ sent: true }`; a rejection returns the reason instead.
 */
export function emailGraph(options: {
  checkpointer: BaseCheckpointSaver
  onSend: (input: { to: string }) => void
  model?: PromptedChatModel
}) {
  const model = options.model ?? new PromptedChatModel(emailReply)
  const sendEmail = tool(
    async (input: { to: string }, config) => {
      const decision = requestApproval({ id: config.toolCall?.id, name: 'send_email', args: input })
      if (decision.type === 'reject') return `Not sent: ${decision.message ?? 'rejected'}`
      const args = decision.type === 'edit' ? (decision.editedAction.args as { to: string }) : input
      options.onSend(args)
      return { sent: true }
    },
    {
      name: 'send_email',
      description: 'Send an email',
      schema: z.object({ to: z.string() }),
    }
  )
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({
      messages: [await model.bindTools([sendEmail]).invoke(state.messages)],
    }))
    .addNode('tools', new ToolNode([sendEmail]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (state) => {
      const last = state.messages.at(-1) as { tool_calls?: unknown[] } | undefined
      return last?.tool_calls?.length ? 'tools' : END
    })
    .addEdge('tools', 'agent')
    .compile({ checkpointer: options.checkpointer })
}

/** The email scenario played by a scripted LangChain chat model (no network). */
export async function emailAgent(options: {
  db: Database
  /** Called once per run of the send_email tool, with its input. */
  onSend: (input: { to: string }) => void
}): Promise<AgentRunner> {
  // TODO(langgraph-checkpointer): the Lucid checkpointer on `options.db` once it lands; the
  // in-memory one serves one process only.
  void options.db
  const graph = emailGraph({ checkpointer: new MemorySaver(), onSend: options.onSend })
  return langGraphAgent({ graph, actions: ['send_email'] })
}
