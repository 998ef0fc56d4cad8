import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai'

/**
 * A headless `useChat`: the AI SDK's own `DefaultChatTransport` (the requests `useChat` sends)
 * and `readUIMessageStream` (how it builds the assistant message from the chunks), against the
 * door's routes under `base`, as `user` (the `x-user` principal of `serveApp`).
 */
export function headlessChat(base: string, chatId: string, user = 'alice') {
  const transport = new DefaultChatTransport<UIMessage>({
    api: `${base}/chat`,
    headers: { 'x-user': user },
  })
  const messages: UIMessage[] = []

  /** Read a chunk stream into a message (from `message` when continuing it). */
  async function read(stream: ReadableStream<UIMessageChunk>, message?: UIMessage) {
    let last: UIMessage | undefined
    for await (const snapshot of readUIMessageStream({
      message: message ? structuredClone(message) : undefined,
      stream,
      terminateOnError: true,
    })) {
      last = snapshot
    }
    return last!
  }

  /** Replace (by id) or append the assistant message. */
  function keep(message: UIMessage) {
    const at = messages.findIndex((m) => m.id === message.id)
    if (at === -1) messages.push(message)
    else messages[at] = message
    return message
  }

  return {
    transport,
    messages,
    read,
    keep,
    /** `sendMessage({ text })`: a new user message, the answer read whole. */
    async send(text: string) {
      messages.push({ id: `u${messages.length}`, role: 'user', parts: [{ type: 'text', text }] })
      const stream = await transport.sendMessages({
        chatId,
        messages,
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      })
      return keep(await read(stream))
    },
    /** `addToolApprovalResponse` on every asked approval of the last message, then the request. */
    async answerApprovals(approved: boolean, reason?: string) {
      const last = structuredClone(messages.at(-1)!)
      for (const part of last.parts as any[]) {
        if (part.state === 'approval-requested') {
          part.state = 'approval-responded'
          part.approval = { ...part.approval, approved, ...(reason ? { reason } : {}) }
        }
      }
      messages[messages.length - 1] = last
      return this.continue(last)
    },
    /** POST the messages as they are (the last is the assistant's), reading the continuation. */
    async continue(last = messages.at(-1)!) {
      const stream = await transport.sendMessages({
        chatId,
        messages,
        trigger: 'submit-message',
        messageId: last.id,
        abortSignal: undefined,
      })
      return keep(await read(stream, last))
    },
    /**
     * `sendMessage({ text })` that drops the page once `cut(chunk)` says so (the request is
     * aborted); resolves to the message id the turn started with.
     */
    async sendAndDrop(text: string, cut: (chunk: UIMessageChunk) => boolean) {
      messages.push({ id: `u${messages.length}`, role: 'user', parts: [{ type: 'text', text }] })
      const controller = new AbortController()
      const stream = await transport.sendMessages({
        chatId,
        messages,
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: controller.signal,
      })
      const reader = stream.getReader()
      let messageId = ''
      while (true) {
        const { value, done } = await reader.read()
        if (done) break
        if (value.type === 'start') messageId = value.messageId ?? ''
        if (cut(value)) break
      }
      controller.abort()
      await reader.cancel().catch(() => {})
      return messageId
    },
    /** `addToolOutput` on the pending question set (the dynamic tool `elicitation`), then send. */
    async answerQuestions(output: unknown) {
      const last = structuredClone(messages.at(-1)!)
      for (const part of last.parts as any[]) {
        if (part.type === 'dynamic-tool' && part.state === 'input-available') {
          part.state = 'output-available'
          part.output = output
        }
      }
      messages[messages.length - 1] = last
      return this.continue(last)
    },
    /** `resumeStream()`: `null` on 204, else the resumed message (replayed from the start). */
    async resume() {
      const stream = await transport.reconnectToStream({ chatId })
      if (!stream) return null
      return keep(await read(stream))
    },
  }
}

/** The text of a message's text parts. */
export const textOf = (message: UIMessage) =>
  message.parts
    .filter((p) => p.type === 'text')
    .map((p: any) => p.text)
    .join('')

/** A message's tool parts. */
export const toolParts = (message: UIMessage) =>
  message.parts.filter((p: any) => p.type.startsWith('tool-') || p.type === 'dynamic-tool') as any[]
