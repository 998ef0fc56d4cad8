/**
 * The `useChat` half of `npm run demo -- --check`: the same scenario through the AI SDK UI
 * message stream door, with the AI SDK's own `DefaultChatTransport` and `readUIMessageStream`
 * (what `useChat` runs in the page), headless. It checks structure, not wording (the demo's
 * agent may say anything): a reload mid-answer replays the turn exactly, the approval is
 * decided from the chat, the question set is answered from it, and the turn finishes.
 */
import { randomUUID } from 'node:crypto'
import type { UIMessage } from 'ai'
import { PREFIX, type Demo } from './server.js'
import { headlessChat, textOf, toolParts } from './headless_chat.js'

export interface UseChatReport {
  chatId: string
  messageId: string
  /** The assistant message's text at the end. */
  text: string
}

function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message)
}

const waiting = (message: UIMessage) =>
  toolParts(message).find(
    (p) =>
      p.state === 'approval-requested' ||
      (p.type === 'dynamic-tool' && p.state === 'input-available')
  )

export async function useChatScenario(
  demo: Demo,
  log: (line: string) => void
): Promise<UseChatReport> {
  const chatId = `chat-${randomUUID()}`
  const chat = headlessChat(`${demo.url}${PREFIX}`, chatId, undefined)
  let seen = ''
  const messageId = await chat.sendAndDrop('Send the weekly report', (chunk) => {
    if (chunk.type === 'text-delta') seen += chunk.delta
    return seen.length > 0
  })
  expect(messageId, 'useChat: the turn did not start with a message id')
  log(
    `useChat turn started: POST ${PREFIX}/chat -> start ${messageId}; page dropped after "${seen}"`
  )
  let message = await chat.resume()
  expect(message, 'useChat resume: 204, expected the turn in flight')
  expect(message.id === messageId, 'useChat resume: another message id')
  expect(
    textOf(message).startsWith(seen),
    'useChat resume: the replay does not start as the page saw it'
  )
  log(
    `resumed: GET ${PREFIX}/chat/${chatId}/stream -> replayed from the start, "${textOf(message)}"`
  )
  for (let round = 0; round < 6; round++) {
    const part = waiting(message)
    if (!part) break
    if (part.state === 'approval-requested') {
      log(
        `approval requested: ${part.type.slice(5)} ${JSON.stringify(part.input)} (${part.approval.id})`
      )
      message = await chat.answerApprovals(true)
      const decided = toolParts(message).find((p) => p.toolCallId === part.toolCallId)
      expect(
        decided?.state === 'output-available',
        `useChat approval: the call is ${decided?.state}`
      )
      log(`approved via addToolApprovalResponse -> ${JSON.stringify(decided.output)}`)
    } else {
      const format = part.input?.questions?.[0]
      const value = format?.options?.at(-1)?.value
      const answers = format && value ? { [format.id]: [value] } : {}
      log(`question set: "${part.input?.preamble ?? ''}" -> answered ${JSON.stringify(answers)}`)
      message = await chat.answerQuestions({ answers })
    }
  }
  expect(!waiting(message), 'useChat: the turn still waits after the answers')
  const again = await chat.resume()
  expect(again === null, 'useChat: a finished turn is still active (expected 204)')
  log(`useChat finished: "${textOf(message)}"; resume -> 204`)
  return { chatId, messageId, text: textOf(message) }
}
