import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage, AIMessageChunk, type BaseMessage } from '@langchain/core/messages'
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs'
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager'

/** What the model answers: some text, then tool calls. */
export interface Reply {
  text?: string
  toolCalls?: { id: string; name: string; args: Record<string, unknown> }[]
}

/**
 * A LangChain chat model for tests and the demo that answers from the prompt it is sent
 * (`decide(messages)`): stateless, so the same object works after a restart or in another
 * process. It streams its text word by word and each tool call's arguments in two chunks, as a
 * provider does (LangGraph's `messages` stream mode asks for streaming); `bindTools` keeps it.
 * `calls` records every prompt.
 */
export class PromptedChatModel extends BaseChatModel {
  readonly calls: BaseMessage[][] = []

  constructor(readonly decide: (messages: BaseMessage[]) => Reply) {
    super({})
  }

  _llmType() {
    return 'prompted'
  }

  /** The tools change nothing: the answer is `decide`'s. */
  bindTools(_tools: unknown[]): this {
    return this
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.calls.push(messages)
    const reply = this.decide(messages)
    const message = new AIMessage({
      content: reply.text ?? '',
      tool_calls: (reply.toolCalls ?? []).map((c) => ({ ...c, type: 'tool_call' as const })),
    })
    return { generations: [{ text: reply.text ?? '', message }] }
  }

  async *_streamResponseChunks(
    messages: BaseMessage[],
    _options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun
  ): AsyncGenerator<ChatGenerationChunk> {
    this.calls.push(messages)
    const reply = this.decide(messages)
    const chunks: AIMessageChunk[] = (reply.text ?? '')
      .split(/(?<= )/)
      .filter(Boolean)
      .map((word) => new AIMessageChunk({ content: word }))
    ;(reply.toolCalls ?? []).forEach((call, index) => {
      const args = JSON.stringify(call.args)
      const half = Math.floor(args.length / 2)
      chunks.push(
        new AIMessageChunk({
          content: '',
          tool_call_chunks: [{ id: call.id, name: call.name, args: args.slice(0, half), index }],
        }),
        new AIMessageChunk({
          content: '',
          tool_call_chunks: [{ args: args.slice(half), index }],
        })
      )
    })
    for (const message of chunks) {
      const chunk = new ChatGenerationChunk({ message, text: message.text })
      yield chunk
      await runManager?.handleLLMNewToken(
        message.text,
        undefined,
        undefined,
        undefined,
        undefined,
        {
          chunk,
        }
      )
    }
  }
}
