import type { StreamFrame } from '../../src/core/frames.js'
import { publicFrame } from '../../src/core/projection.js'
import { createAgUiFetchHandler } from '../../src/http/fetch_handler.js'
import { createDurableStreamsFetchHandler } from '../../src/http/durable_streams_fetch_handler.js'
import { createUiMessageFetchHandler } from '../../src/http/ui_message_fetch_handler.js'
import { scriptedAgent } from '../../src/testing/scripted_agent.js'
import { resetTables } from './db.js'
import { sseBlocks, type SseBlock } from './durable_read.js'
import { serveRuntime } from './fetch_node.js'
import { serveApp } from './http.js'

/**
 * The doors and the Durable Streams routes served over loopback HTTP, on either transport (the
 * AdonisJS app, or the Fetch handlers on a bare server), for the dialect specs: where each is,
 * and the references the specs compare with (the doors' own answers).
 */

/** A run that says something, calls a read tool, then parks on an approval (every turn). */
const runner = () => scriptedAgent({ steps: ['read', 'approval'] })

/** Where a transport serves the doors, and the native route's frames of a run. */
export interface Served {
  ds: string
  chat: string
  agui: string
  frames(runId: string): Promise<unknown[]>
  /** Drop a run's stream (a purge): its readers end. */
  purge(runId: string): Promise<void>
}

export async function adonis(): Promise<Served> {
  const { url, app, agentStream } = await serveApp({ runner: runner() })
  await resetTables(await app.container.make('lucid.db'))
  return {
    ds: `${url}/ds`,
    chat: url,
    agui: `${url}/agui`,
    frames: async (runId) => {
      const response = await fetch(`${url}/runs/${runId}/stream`, {
        headers: { 'x-user': 'alice' },
      })
      return sseBlocks(await response.text()).map((block) => block.data)
    },
    purge: (runId) => agentStream.sink.close(runId),
  }
}

export async function fetchHandlers(cleanup: (fn: () => Promise<void>) => void): Promise<Served> {
  const served = await serveRuntime({ runner: runner() }, (runtime, principal) => {
    const doors = { agui: runtime.door, uiMessage: runtime.uiMessage, rules: {} }
    const ds = createDurableStreamsFetchHandler(runtime.sink, {
      basePath: '/ds',
      principal,
      dialects: doors,
    })
    const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
    const chat = createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/u', principal })
    return (request) => {
      const path = new URL(request.url).pathname
      if (path.startsWith('/ds/')) return ds(request)
      return path.startsWith('/agui') ? agui(request) : chat(request)
    }
  })
  cleanup(served.close)
  return {
    ds: `${served.url}/ds`,
    chat: `${served.url}/u`,
    agui: `${served.url}/agui`,
    // What the native route serves: the sink's one read, through the one public projection.
    frames: async (runId) => {
      const out: unknown[] = []
      for await (const delivered of served.runtime.sink.subscribe(runId)) {
        const frame: Record<string, unknown> = { ...delivered }
        delete frame.cursor
        const shown = publicFrame(frame as unknown as StreamFrame, served.runtime.door.options)
        if (shown) out.push(shown)
      }
      return out
    },
    purge: (runId) => served.runtime.sink.close(runId),
  }
}

/** POST a chat body to the useChat door as alice; its SSE blocks. */
export async function chatPost(served: Served, body: unknown) {
  const response = await fetch(`${served.chat}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify(body),
  })
  if (response.status !== 200) throw new Error(`chat answered ${response.status}`)
  return sseBlocks(await response.text())
}

export const userMessage = (id: string, text: string) => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }],
})

export const data = (blocks: SseBlock[]) => blocks.map((block) => block.data)

/** The useChat door's reconnect (`GET /chat/:chatId/stream`): the active turn replayed. */
export async function chatResume(served: Served, chatId: string) {
  const response = await fetch(`${served.chat}/chat/${chatId}/stream`, {
    headers: { 'x-user': 'alice' },
  })
  if (response.status !== 200) throw new Error(`resume answered ${response.status}`)
  return sseBlocks(await response.text())
}

/** The AG-UI door's run `runId` from `after` (`GET /agui/runs/:runId?after=`). */
export async function aguiRun(served: Served, runId: string, after: number) {
  // As the 1.0 client reads it: the Durable Streams `agui` dialect serves AG-UI 1.0 whole.
  const response = await fetch(`${served.agui}/runs/${runId}?after=${after}`, {
    headers: { 'x-user': 'alice', 'x-ag-ui-client-version': '1.0.0' },
  })
  return data(sseBlocks(await response.text()))
}
