import type { UIMessage } from 'ai'
import { isRunId, type UserPart } from '../../core/frames.js'
import type { Principal } from '../../core/run.js'
import { ownedBy } from '../../door/index.js'
import { positionOf } from '../../sink/read_path.js'
import { userMessageOf } from '../../core/user_message.js'
import type { DoorRun } from '../../store/door_runs.js'
import { UiMessageBuilder, UiMessageTranslator } from '../translate/index.js'
import type { UiDoorDeps } from './reply.js'

/** What the person said as a UI user message's parts (the parts `useChat` sent). */
const uiParts = (parts: UserPart[]): UIMessage['parts'] =>
  parts.map((part) =>
    part.type === 'text'
      ? { type: 'text', text: part.text }
      : {
          type: 'file',
          mediaType: part.mediaType,
          url: part.url,
          ...(part.filename !== undefined ? { filename: part.filename } : {}),
        }
  )

/**
 * A chat's stored messages for `useChat({ messages })` (`GET /chat/:chatId/messages`): per turn
 * (each run that started a stream, oldest first), the person's message (the client's id, its
 * text and file parts) and the assistant's (the turn's stream run id), built from the turn's
 * stored frames by the same translator the stream is served with, folded as `useChat` folds the
 * chunks ({@link UiMessageBuilder}), so it is the message the stream gave. A turn still running
 * gives what is stored so far. `null` (a 404, as for a missing chat) when there is no such chat
 * or it is another principal's.
 */
export async function chatMessages(
  deps: UiDoorDeps,
  chatId: string,
  principal: Principal | null
): Promise<UIMessage[] | null> {
  if (!isRunId(chatId)) return null
  const latest = await deps.runs.latest(chatId)
  if (!latest || !ownedBy(latest, principal)) return null
  const messages: UIMessage[] = []
  for (const run of await deps.runs.streams(chatId)) {
    if (ownedBy(run, principal)) messages.push(...(await turnMessages(deps, run)))
  }
  return messages
}

/** One turn's messages: the person's, then the assistant's (left out while it has no part). */
async function turnMessages(deps: UiDoorDeps, run: DoorRun): Promise<UIMessage[]> {
  const translator = new UiMessageTranslator(deps.options)
  const builder = new UiMessageBuilder(run.streamRunId)
  builder.push({ type: 'start', messageId: run.streamRunId })
  let user: UIMessage | null = null
  // A segment end the stream went on from closes what is open; the last one finishes the turn.
  let ended = false
  for await (const item of deps.sink.replay(run.streamRunId, { superseded: true })) {
    if (item.t === 'end') {
      ended = true
      continue
    }
    if (ended) for (const chunk of translator.end(false)) builder.push(chunk)
    ended = false
    const said = userMessageOf(item)
    if (said) {
      user ??= { id: said.id, role: 'user', parts: uiParts(said.parts) }
      continue
    }
    for (const chunk of translator.push(item, positionOf(item))) builder.push(chunk)
  }
  if (ended) for (const chunk of translator.end(true)) builder.push(chunk)
  if (!user && run.inputMessage && typeof run.inputMessage.content === 'string') {
    // A turn stored before what the person said was a frame: its text from the run's row.
    const { id, content } = run.inputMessage
    user = { id, role: 'user', parts: [{ type: 'text', text: content }] }
  }
  const out: UIMessage[] = user ? [user] : []
  if (builder.message.parts.length > 0) out.push(builder.message)
  return out
}
