import { stream, type LiveMode } from '@durable-streams/client'
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai'

/** What one read of a Durable Stream gave through the official client. */
export interface DurableRead {
  items: unknown[]
  /** The offset of each batch, in order. */
  offsets: string[]
  /** The offset to resume from. */
  offset: string
  closed: boolean
}

/**
 * Read a Durable Stream with `@durable-streams/client` (`stream()`, JSON mode) as `user` (the
 * `x-user` principal): every batch's items and offset, until the client's session ends (a
 * catch-up at the tail, a live read at the stream's closing).
 */
export async function readDurable(
  url: string,
  options: {
    live: LiveMode
    offset?: string
    user?: string
    signal?: AbortSignal
    /** Stop once this many items came (a live read of a stream that stays open). */
    count?: number
  }
): Promise<DurableRead> {
  const response = await stream({
    url,
    live: options.live,
    offset: options.offset,
    json: true,
    headers: { 'x-user': options.user ?? 'alice' },
    signal: options.signal,
    warnOnHttp: false,
  })
  const items: unknown[] = []
  const offsets: string[] = []
  // The session's `closed` may resolve before its subscriber saw the last batch: a read ends
  // at the batch that ends it (up to date for a catch-up, the stream's closing for a live one).
  let closed = false
  await new Promise<void>((resolve, reject) => {
    response.subscribeJson((batch) => {
      items.push(...batch.items)
      offsets.push(batch.offset)
      closed = batch.streamClosed
      if (batch.streamClosed || (options.live === false && batch.upToDate)) resolve()
      if (options.count !== undefined && items.length >= options.count) resolve()
    })
    response.closed.then(() => setImmediate(resolve), reject)
  })
  response.cancel()
  return { items, offsets, offset: offsets.at(-1) ?? response.offset, closed }
}

/** One SSE block of a door's answer: its `id:` (when it has one) and its data (`[DONE]` left out). */
export interface SseBlock {
  id?: string
  data: any
}

/** The blocks of an SSE body (`data: [DONE]` left out). */
export function sseBlocks(text: string): SseBlock[] {
  const out: SseBlock[] = []
  for (const block of text.split('\n\n')) {
    let id: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = line.slice(3).trim()
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
    }
    if (data.length === 0 || data.join('\n') === '[DONE]') continue
    out.push({ data: JSON.parse(data.join('\n')), ...(id ? { id } : {}) })
  }
  return out
}

/** The blocks up to and including the one whose id is `id` (a position of the door's stream). */
export function upTo(blocks: SseBlock[], id: string) {
  const at = blocks.findIndex((block) => block.id === id)
  if (at === -1) throw new Error(`no block with id ${id}`)
  return blocks.slice(0, at + 1)
}

/** The assistant message a chunk list builds (`readUIMessageStream`, as useChat does). */
export async function messageOf(chunks: UIMessageChunk[]) {
  let last: UIMessage | undefined
  const body = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk)
      controller.close()
    },
  })
  for await (const snapshot of readUIMessageStream({ stream: body })) last = snapshot
  return last!
}

/** `message` with every asked approval answered (`addToolApprovalResponse`). */
export function approved(message: UIMessage, yes = true): UIMessage {
  const copy = structuredClone(message)
  for (const part of copy.parts as any[]) {
    if (part.state === 'approval-requested') {
      part.state = 'approval-responded'
      part.approval = { ...part.approval, approved: yes }
    }
  }
  return copy
}

/**
 * Items with adjacent text pieces joined: a live reader gets a text row as the pieces it grew
 * by, a replay gets it whole (the package's coalescing; the text is the same). UI message
 * `text-delta` / `reasoning-delta` of one part, AG-UI `TEXT_MESSAGE_CONTENT` of one message,
 * `text` frames.
 */
export function coalesced(items: unknown[]): unknown[] {
  const out: any[] = []
  for (const item of items as any[]) {
    const last = out.at(-1)
    const key = textKey(item)
    if (last && key !== null && textKey(last) === key) {
      const field = 'delta' in item ? 'delta' : 'v'
      out[out.length - 1] = { ...last, [field]: last[field] + item[field] }
    } else out.push(item)
  }
  return out
}

function textKey(item: any): string | null {
  if (item?.type === 'text-delta' || item?.type === 'reasoning-delta')
    return `${item.type}:${item.id}`
  if (item?.type === 'TEXT_MESSAGE_CONTENT') return `agui:${item.messageId}`
  if (item?.t === 'text') return 'frame'
  return null
}
