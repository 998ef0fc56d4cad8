import { HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import {
  END,
  MessagesAnnotation,
  START,
  StateGraph,
  type BaseCheckpointSaver,
} from '@langchain/langgraph'
import { ToolNode } from '@langchain/langgraph/prebuilt'
import { z } from 'zod'
import type { AgentRunner } from '../../src/runner/contract.js'
import { langGraphAgent, LucidSaver, requestApproval } from '../../src/runners/langgraph/index.js'
import { PromptedChatModel, type Reply } from './langgraph_model.js'
import { answerTo, type EmailAgentOptions } from './scenario.js'

/**
 * The email scenario (demo/agents/scenario.ts), decided from the prompt: the person's texts,
 * and whether the newest message is send_email's result saying it was sent.
 */
export function emailReply(messages: BaseMessage[]): Reply {
  const last = messages.at(-1)
  const said = messages.filter((m) => HumanMessage.isInstance(m)).map((m) => m.text)
  const toolResult =
    last && ToolMessage.isInstance(last) ? { sent: /"sent":true/.test(last.text) } : undefined
  const answer = answerTo({ said, toolResult })
  return {
    text: answer.text,
    ...(answer.call
      ? { toolCalls: [{ id: answer.call.id, name: 'send_email', args: answer.call.input }] }
      : {}),
  }
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
      const decision = requestApproval(
        { id: config.toolCall?.id, name: 'send_email', args: input },
        {
          inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
        }
      )
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

/**
 * The email scenario played by a scripted LangChain chat model (no network), its graph's state
 * on the app's database (`LucidSaver`, in the tables of the package's migration): any replica
 * resumes it.
 */
export async function emailAgent(options: EmailAgentOptions): Promise<AgentRunner> {
  const checkpointer = new LucidSaver(options.db)
  const graph = emailGraph({ checkpointer, onSend: options.onSend })
  return langGraphAgent({ graph, actions: ['send_email'] })
}
