import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { coalesced, readDurable } from './helpers/durable_read.js'
import {
  adonis,
  aguiRun,
  chatPost,
  data,
  fetchHandlers,
  userMessage,
  type Served,
} from './helpers/durable_served.js'

/** A run parked, then cancelled (the chat's stop) while readers wait: every dialect closes. */
async function cancelled(assert: any, served: Served) {
  const chatId = randomUUID()
  const asked = await chatPost(served, {
    id: chatId,
    messages: [userMessage('u0', 'numbers?')],
    trigger: 'submit-message',
  })
  const streamRunId = asked[0].data.messageId as string
  const run = `${served.ds}/runs/${streamRunId}`
  const waiting = {
    ui: readDurable(`${run}/ui-message`, { live: 'sse', offset: '-1' }),
    agui: readDurable(`${run}/agui`, { live: 'sse', offset: '-1' }),
    frames: readDurable(`${run}/frames`, { live: 'long-poll', offset: '-1' }),
  }
  await new Promise((resolve) => setTimeout(resolve, 300))
  const stop = await fetch(`${served.chat}/chat/${chatId}/stop`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify({ mode: 'keep' }),
  })
  assert.oneOf(stop.status, [200, 202])
  // AG-UI: the door takes the run to its cancellation (RUN_FINISHED cancelled), live and stored.
  const agui = await waiting.agui
  assert.isTrue(agui.closed)
  const door = await aguiRun(served, streamRunId, 0)
  assert.deepEqual(door.at(-1).outcome, { type: 'cancelled' })
  assert.deepEqual(coalesced(agui.items), coalesced(door))
  const aguiWhole = await readDurable(`${run}/agui`, { live: false })
  assert.deepEqual(aguiWhole.items, door)
  // useChat: the turn finishes at the park (the door's verdict: it never goes on).
  const ui = await waiting.ui
  assert.isTrue(ui.closed)
  assert.equal((ui.items.at(-1) as { type: string }).type, 'finish')
  const uiWhole = await readDurable(`${run}/ui-message`, { live: false })
  assert.isTrue(uiWhole.closed)
  assert.deepEqual(coalesced(ui.items), coalesced(uiWhole.items))
  assert.deepEqual(coalesced(uiWhole.items), coalesced(data(asked)))
  // Frames: the cancellation's frames, then closed.
  const frames = await waiting.frames
  assert.isTrue(frames.closed)
  const native = await served.frames(streamRunId)
  assert.deepEqual(coalesced(frames.items), coalesced(native))
  assert.isTrue(
    native.some((frame: any) => frame.t === 'event' && frame.event.kind === 'cancelled')
  )
}

/** A parked run purged while readers wait: each read ends, closed; the stream is gone (404). */
async function purged(assert: any, served: Served) {
  const chatId = randomUUID()
  const asked = await chatPost(served, {
    id: chatId,
    messages: [userMessage('u0', 'numbers?')],
    trigger: 'submit-message',
  })
  const run = `${served.ds}/runs/${asked[0].data.messageId}`
  const end = Number(asked.at(-1)!.id)
  // Each dialect, and the turn's second segment (after its park: it waits too).
  const paths = ['frames', 'agui', 'ui-message', 'ui-message/segments/0000000000000000_/0']
  const readers = [...paths, `ui-message/segments/0000000000000000_/${end}`].map((path) =>
    readDurable(`${run}/${path}`, { live: 'sse', offset: '-1' })
  )
  await new Promise((resolve) => setTimeout(resolve, 300))
  await served.purge(asked[0].data.messageId)
  const reads = await Promise.all(readers)
  for (const read of reads) assert.isTrue(read.closed)
  // The first segment had closed at its park, whole, before the purge.
  assert.deepEqual(coalesced(reads[3].items), coalesced(data(asked)))
  const gone = await fetch(`${run}/frames?offset=-1`, { headers: { 'x-user': 'alice' } })
  assert.equal(gone.status, 404)
}

test.group("Durable Streams dialects: how a run's stream ends", () => {
  test('a parked run cancelled while readers wait: every dialect closes (AdonisJS)', async ({
    assert,
  }) => {
    await cancelled(assert, await adonis())
  }).timeout(60_000)

  test('a parked run cancelled while readers wait: every dialect closes (Fetch)', async ({
    assert,
    cleanup,
  }) => {
    await cancelled(assert, await fetchHandlers(cleanup))
  }).timeout(60_000)

  test('a parked run purged while readers wait: every read ends (AdonisJS)', async ({ assert }) => {
    await purged(assert, await adonis())
  }).timeout(60_000)

  test('a parked run purged while readers wait: every read ends (Fetch)', async ({
    assert,
    cleanup,
  }) => {
    await purged(assert, await fetchHandlers(cleanup))
  }).timeout(60_000)
})
