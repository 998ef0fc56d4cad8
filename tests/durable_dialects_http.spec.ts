import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { UIMessageChunk } from 'ai'
import { continuationRunId } from '../src/agui/ids.js'
import { formatOffset, parseOffset } from '../src/durable_streams/protocol/offset.js'
import { threadCursor, TURN_SPAN } from '../src/durable_streams/dialects/index.js'
import type { Cursor } from '../src/core/cursor.js'
import { assertConforms } from './helpers/agui.js'
import { approved, coalesced, messageOf, readDurable, upTo } from './helpers/durable_read.js'
import {
  adonis,
  aguiRun,
  chatPost,
  chatResume,
  data,
  fetchHandlers,
  userMessage,
  type Served,
} from './helpers/durable_served.js'

const sortedAsText = (offsets: string[]) =>
  offsets.every((offset, i) => i === 0 || offsets[i - 1] < offset)

async function scenario(assert: any, served: Served) {
  const chatId = randomUUID()
  const first = userMessage('u0', 'numbers?')
  const asked = await chatPost(served, { id: chatId, messages: [first], trigger: 'submit-message' })
  const streamRunId = asked[0].data.messageId as string
  const run = `${served.ds}/runs/${streamRunId}`
  // The park's end is the id of the door's last chunk (`finish`), the approval's row the one
  // its `approval-<seq>` names.
  const end = Number(asked.at(-1)!.id)
  const message = await messageOf(data(asked) as UIMessageChunk[])
  const call = (message.parts as any[]).find((part) => part.state === 'approval-requested')
  const approvalSeq = Number(String(call.approval.id).slice('approval-'.length))
  assert.isAbove(end, approvalSeq)

  // Parked: a catch-up has the turn up to the park, not its end (which the answer decides):
  // what the door's reconnect replays (`GET /chat/:id/stream`) but the chunks of that end.
  const replayed = await chatResume(served, chatId)
  const parked = await readDurable(`${run}/ui-message`, { live: false })
  assert.isFalse(parked.closed)
  assert.equal(replayed.at(-1)!.id, String(end))
  const beforeEnd = upTo(replayed, replayed.filter((b) => b.id && b.id !== String(end)).at(-1)!.id!)
  assert.isBelow(beforeEnd.length, replayed.length)
  assert.lengthOf(parked.items, beforeEnd.length)
  assert.deepEqual(parked.items, data(beforeEnd))
  // The door's live answer had the same chunks, its text as it grew.
  assert.deepEqual(coalesced(data(asked)), coalesced(data(replayed)))
  const now = await readDurable(`${run}/ui-message`, { live: false, offset: 'now' })
  assert.deepEqual(now.items, [])
  // HEAD of the parked run: open, its tail where `now` reads from.
  const parkedHead = await fetch(`${run}/ui-message`, {
    method: 'HEAD',
    headers: { 'x-user': 'alice' },
  })
  assert.equal(parkedHead.status, 200)
  assert.isNull(parkedHead.headers.get('stream-closed'))
  assert.equal(parkedHead.headers.get('stream-next-offset'), now.offset)
  assert.equal(now.offset, parked.offset)

  // Readers that wait across the park: SSE from the start, long-poll from the catch-up's
  // offset, SSE from `now`; frames and AG-UI too.
  const waiting = {
    sse: readDurable(`${run}/ui-message`, { live: 'sse', offset: '-1' }),
    longPoll: readDurable(`${run}/ui-message`, { live: 'long-poll', offset: parked.offset }),
    fromNow: readDurable(`${run}/ui-message`, { live: 'sse', offset: now.offset }),
    frames: readDurable(`${run}/frames`, { live: 'long-poll', offset: '-1' }),
    agui: readDurable(`${run}/agui`, { live: 'sse', offset: '-1' }),
  }
  // Give the readers time to reach the tail and wait there (not a timed assertion: the answer
  // is checked whatever the order).
  await new Promise((resolve) => setTimeout(resolve, 300))

  // Approved through the useChat door while they wait.
  const answer = approved(message)
  const decision = {
    id: chatId,
    messages: [first, answer],
    trigger: 'submit-message',
    messageId: answer.id,
  }
  const went = await chatPost(served, decision)
  assert.equal(went[0].data.type, 'start')
  const sse = await waiting.sse
  assert.isTrue(sse.closed)
  // The same decision again once the run is over: the door replays the continuation from the
  // store (decide once). The whole turn: the door's replay up to the approval, then that.
  const again = await chatPost(served, decision)
  const turn = [...data(upTo(replayed, String(approvalSeq))), ...data(again.slice(1))]
  assert.equal(turn.at(-1).type, 'finish')
  assert.deepEqual(coalesced(data(went)), coalesced(data(again)))

  // Live readers got the continuation's text as it grew: the same chunks, text joined.
  assert.deepEqual(coalesced(sse.items), coalesced(turn))
  const longPoll = await waiting.longPoll
  assert.isTrue(longPoll.closed)
  assert.deepEqual(coalesced(longPoll.items), coalesced(turn.slice(parked.items.length)))
  const fromNow = await waiting.fromNow
  assert.deepEqual(coalesced(fromNow.items), coalesced(turn.slice(parked.items.length)))

  // Catch-up of the finished run: the door's chunks, closed; offsets sort as text. (The door's
  // replay reads through this replica's feed, or its live fan-out, while they last: its text
  // may come as the pieces it grew by; a catch-up reads the stored rows.)
  const whole = await readDurable(`${run}/ui-message`, { live: false })
  assert.isTrue(whole.closed)
  assert.deepEqual(coalesced(whole.items), coalesced(turn))
  assert.deepEqual(whole.items.slice(0, parked.items.length), parked.items)
  assert.isTrue(sortedAsText(whole.offsets))
  // Resumed from a returned offset: exactly what follows it.
  const resumed = await readDurable(`${run}/ui-message`, { live: false, offset: parked.offset })
  assert.deepEqual(resumed.items, whole.items.slice(parked.items.length))
  assert.isTrue(resumed.closed)
  // A live read of a closed stream from its final offset: nothing, closed.
  const after = await readDurable(`${run}/ui-message`, { live: 'long-poll', offset: whole.offset })
  assert.deepEqual(after.items, [])
  assert.isTrue(after.closed)

  // Frames: what the native route serves, one item per frame shown.
  const frames = await waiting.frames
  const native = await served.frames(streamRunId)
  assert.isTrue(frames.closed)
  assert.deepEqual(coalesced(frames.items), coalesced(native))
  // The native route reads through this replica's feed too: its text rows may come as the
  // pieces they grew by (the same text).
  const framesWhole = await readDurable(`${run}/frames`, { live: false })
  assert.lengthOf(framesWhole.items, coalesced(native).length)
  assert.deepEqual(framesWhole.items, coalesced(native))
  assert.isTrue(sortedAsText(framesWhole.offsets))

  // AG-UI: the door's first AG-UI run, then the continuation the door names after the park.
  const agui = await waiting.agui
  const expected = [
    ...(await aguiRun(served, streamRunId, 0)),
    ...(await aguiRun(served, continuationRunId(streamRunId, end), end)),
  ]
  assert.isTrue(agui.closed)
  assert.deepEqual(coalesced(agui.items), coalesced(expected))
  const aguiWhole = await readDurable(`${run}/agui`, { live: false })
  assert.lengthOf(aguiWhole.items, expected.length)
  assert.deepEqual(aguiWhole.items, expected)
  await assertConforms(assert, aguiWhole.items as any[])
  const aguiResumed = await readDurable(`${run}/agui`, {
    live: 'sse',
    offset: agui.offsets[1],
  })
  assert.deepEqual(aguiResumed.items, expected.slice(expected.length - aguiResumed.items.length))
  assert.isBelow(aguiResumed.items.length, expected.length)
  assert.isAbove(aguiResumed.items.length, 0)

  // Owner only; bad offsets; read-only.
  for (const dialect of ['frames', 'agui', 'ui-message']) {
    const other = await fetch(`${run}/${dialect}?offset=-1`, { headers: { 'x-user': 'bob' } })
    assert.equal(other.status, 404)
    const missing = await fetch(`${served.ds}/runs/${randomUUID()}/${dialect}?offset=-1`, {
      headers: { 'x-user': 'alice' },
    })
    assert.equal(missing.status, 404)
    for (const offset of ['abc', '12', '0000000000000001', formatOffset({ seq: 1_000_000 })]) {
      const bad = await fetch(`${run}/${dialect}?offset=${offset}`, {
        headers: { 'x-user': 'alice' },
      })
      assert.equal(bad.status, 400, `${dialect} offset ${offset}`)
      assert.equal(((await bad.json()) as { code: string }).code, 'invalid_offset')
    }
    const write = await fetch(`${run}/${dialect}`, {
      method: 'POST',
      headers: { 'x-user': 'alice', 'content-type': 'application/json' },
      body: '[1]',
    })
    assert.equal(write.status, 405)
    const head = await fetch(`${run}/${dialect}`, {
      method: 'HEAD',
      headers: { 'x-user': 'alice' },
    })
    assert.equal(head.status, 200)
    assert.equal(head.headers.get('stream-closed'), 'true')
  }

  // The thread: its turns in order. A reader at its end waits for the next turn.
  const threadUrl = `${served.ds}/threads/${chatId}/ui-message`
  const threadNow = await readDurable(threadUrl, { live: false, offset: 'now' })
  const nextTurn = readDurable(threadUrl, { live: 'long-poll', offset: threadNow.offset, count: 1 })
  const second = userMessage('u1', 'again')
  const asked2 = await chatPost(served, {
    id: chatId,
    messages: [first, answer, second],
    trigger: 'submit-message',
  })
  const run2 = `${served.ds}/runs/${asked2[0].data.messageId}`
  const waited = await nextTurn
  assert.deepEqual(waited.items[0], { type: 'start', messageId: asked2[0].data.messageId })
  assert.match(waited.offset, /^000002/)
  const turn2 = await readDurable(`${run2}/ui-message`, { live: false })
  const thread = await readDurable(`${served.ds}/threads/${chatId}/ui-message`, { live: false })
  assert.isFalse(thread.closed)
  assert.lengthOf(thread.items, whole.items.length + turn2.items.length)
  assert.deepEqual(thread.items, [...whole.items, ...turn2.items])
  assert.isTrue(sortedAsText(thread.offsets))
  const threadFrames = await readDurable(`${served.ds}/threads/${chatId}/frames`, { live: false })
  const frames2 = await readDurable(`${run2}/frames`, { live: false })
  assert.deepEqual(threadFrames.items, [...framesWhole.items, ...frames2.items])
  for (const offset of ['abc', formatOffset({ seq: 3 * TURN_SPAN })]) {
    const bad = await fetch(`${threadUrl}?offset=${offset}`, { headers: { 'x-user': 'alice' } })
    assert.equal(bad.status, 400, `thread offset ${offset}`)
  }
  const other = await fetch(`${served.ds}/threads/${chatId}/agui?offset=-1`, {
    headers: { 'x-user': 'bob' },
  })
  assert.equal(other.status, 404)
  // Thread offsets: the turn (6 digits), then the run's cursor; from turn 1's end, turn 2.
  assert.match(thread.offset, /^000002/)
  const runEnd = parseOffset(whole.offset) as { cursor: Cursor }
  const turnOneEnd = formatOffset(threadCursor({ turn: 1, cursor: runEnd.cursor }))
  assert.isTrue(turnOneEnd < thread.offset)
  const fromTurn2 = await readDurable(`${served.ds}/threads/${chatId}/ui-message`, {
    live: false,
    offset: turnOneEnd,
  })
  assert.deepEqual(fromTurn2.items, turn2.items)
}

test.group('Durable Streams dialects: runs and threads read by @durable-streams/client', () => {
  test('over the AdonisJS routes', async ({ assert }) => {
    await scenario(assert, await adonis())
  }).timeout(60_000)

  test('over the Fetch handler', async ({ assert, cleanup }) => {
    await scenario(assert, await fetchHandlers(cleanup))
  }).timeout(60_000)
})
