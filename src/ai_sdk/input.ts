import { convertToModelMessages, type ModelMessage, type UIMessage } from 'ai'

/**
 * The conversation a run starts from, as model messages, from the run's input
 * (`RunContext.input`, stored with the run, so a resume reads the same):
 * - a string: one user message;
 * - the AG-UI door's `{ message, context }` (the newest user message; `context` entries become
 *   one system message listing `description: value`);
 * - `{ messages }`: model messages, or UI messages (`parts`, as `useChat` sends them), converted
 *   with the AI SDK's `convertToModelMessages`; with `message` too, it follows them.
 * Anything else: no messages (the model gets only the system prompt).
 */
export async function inputMessages(input: unknown): Promise<ModelMessage[]> {
  if (typeof input === 'string') return [{ role: 'user', content: input }]
  if (!input || typeof input !== 'object') return []
  const { message, context, messages } = input as {
    message?: unknown
    context?: unknown
    messages?: unknown
  }
  const out: ModelMessage[] = []
  const notes = Array.isArray(context)
    ? context
        .filter((entry) => entry && typeof entry === 'object')
        .map((entry) => `${String(entry.description ?? '')}: ${String(entry.value ?? '')}`)
    : []
  if (notes.length > 0) out.push({ role: 'system', content: `Context:\n${notes.join('\n')}` })
  if (Array.isArray(messages) && messages.length > 0) {
    const isUi = messages.every((m) => m && typeof m === 'object' && Array.isArray(m.parts))
    out.push(
      ...(isUi
        ? await convertToModelMessages(messages as UIMessage[])
        : (messages as ModelMessage[]))
    )
  }
  if (typeof message === 'string' && message.length > 0) {
    out.push({ role: 'user', content: message })
  }
  return out
}
