import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables, snapshotTables } from './helpers/db.js'
import { jsonClient, readResponse, runInput, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { headlessChat, toolParts } from './helpers/ui_chat.js'

/**
 * Deciding never tells anyone whether another person's item exists: on every decide route
 * (the JSON items routes, cancel, the useChat door, an AG-UI resume, the admin form), someone
 * who may neither see nor decide an item gets exactly the answer of a missing one; 403 is kept
 * for whoever may see it (their own run, or an admin) when the policy refuses.
 */

async function setup(approver = 'requester') {
  const served = await serveApp({ runner: scriptedAgent({ steps: ['approval'], approver }) })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const snapshot = () => snapshotTables(db)
  const call = jsonClient(served.url)
  /** A JSON POST as `user`, with the admin header when `admin`. */
  const post = async (path: string, body: unknown, user: string, admin = false) =>
    readResponse(
      await fetch(`${served.url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-user': user,
          ...(admin ? { 'x-admin': 'yes' } : {}),
        },
        body: JSON.stringify(body),
      })
    )
  /** Alice's parked native run and its item. */
  const parkNative = async () => {
    const { runId } = (await call('POST', '/runs', { message: 'go' })).json
    await served.agentStream.driver.settled()
    const [item] = await served.agentStream.parking.queries.pendingOf(runId)
    return { runId, item }
  }
  return { ...served, snapshot, call, post, parkNative }
}

/** Two answers alike: the same status and the same body. */
function same(assert: any, a: { status: number; text: string }, b: typeof a, what: string) {
  assert.equal(a.status, 404, what)
  assert.equal(b.status, 404, what)
  assert.equal(a.text, b.text, what)
}

test.group('Deciding another person\u2019s item: the 404 of a missing one', () => {
  test('JSON items routes and cancel: a stranger gets the missing answer; its owner and an admin get 403', async ({
    assert,
  }) => {
    const { post, parkNative, snapshot } = await setup()
    const { runId, item } = await parkNative()
    const path = `/items/${item.runId}/${item.itemId}`
    const nowhere = `/items/${item.runId}/no-such-item`
    const before = await snapshot()
    for (const [action, body] of [
      ['approve', {}],
      ['reject', { reason: 'no' }],
      ['answer', { answers: {} }],
    ] as const) {
      same(
        assert,
        await post(`${path}/${action}`, body, 'mallory'),
        await post(`${nowhere}/${action}`, body, 'mallory'),
        action
      )
    }
    same(
      assert,
      await post(`/runs/${runId}/cancel`, {}, 'mallory'),
      await post(`/runs/${randomUUID()}/cancel`, {}, 'mallory'),
      'cancel'
    )
    // An admin sees every item: the policy's refusal is a 403 for them, and says so.
    const admin = await post(`${path}/approve`, {}, 'mallory', true)
    assert.equal(admin.status, 403)
    assert.equal(admin.json.code, 'E_DECISION_FORBIDDEN')
    assert.equal((await post(`/runs/${runId}/cancel`, {}, 'mallory', true)).status, 403)
    assert.equal(await snapshot(), before)
    // Once it is decided, only who may see the run learns of the conflict.
    assert.equal((await post(`${path}/approve`, {}, 'alice')).status, 200)
    assert.equal((await post(`${path}/reject`, {}, 'alice')).status, 409)
    same(
      assert,
      await post(`${path}/reject`, {}, 'mallory'),
      await post(`${nowhere}/reject`, {}, 'mallory'),
      'decided'
    )
  })

  test('a role approver: the requester sees the item (403), a stranger does not (404)', async ({
    assert,
  }) => {
    const { post, parkNative } = await setup('finance')
    const { item } = await parkNative()
    const path = `/items/${item.runId}/${item.itemId}/approve`
    const own = await post(path, {}, 'alice')
    assert.equal(own.status, 403)
    assert.equal(own.json.code, 'E_DECISION_FORBIDDEN')
    same(
      assert,
      await post(path, {}, 'mallory'),
      await post(`/items/${item.runId}/nope/approve`, {}, 'mallory'),
      'role'
    )
  })

  test('the useChat door and an AG-UI resume: another person\u2019s chat or thread answers as a missing one', async ({
    assert,
  }) => {
    const { url, post, snapshot } = await setup()
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(url, chatId)
    await chat.send('send the report')
    const answered = structuredClone(chat.messages)
    const part = toolParts(answered.at(-1)!)[0]
    part.state = 'approval-responded'
    part.approval = { ...part.approval, approved: true }
    const threadId = `t-${randomUUID()}`
    const parked = await post('/agui', runInput(threadId, randomUUID()), 'alice')
    const finished = parseSse(parked.text).at(-1)!.event
    const resume = finished.outcome.interrupts.map((interrupt: { id: string }) => ({
      interruptId: interrupt.id,
      status: 'resolved',
      payload: { approved: true },
    }))
    const before = await snapshot()
    same(
      assert,
      await post('/chat', { id: chatId, messages: answered }, 'mallory'),
      await post('/chat', { id: `chat-${randomUUID()}`, messages: answered }, 'mallory'),
      'useChat'
    )
    same(
      assert,
      await post('/agui', runInput(threadId, randomUUID(), { resume }), 'mallory'),
      await post('/agui', runInput(`t-${randomUUID()}`, randomUUID(), { resume }), 'mallory'),
      'AG-UI'
    )
    assert.equal(await snapshot(), before)
  })

  test('the admin form: outside the admin hook every item is 403 alike; an admin who may not decide gets no form', async ({
    assert,
  }) => {
    const { url, parkNative, snapshot } = await setup()
    const { item } = await parkNative()
    const form = (path: string, headers: Record<string, string>) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: 'park=1',
        redirect: 'manual',
      }).then(readResponse)
    const before = await snapshot()
    const theirs = await form(`/admin/items/${item.runId}/${item.itemId}/approve`, {
      'x-user': 'mallory',
    })
    const missing = await form(`/admin/items/${item.runId}/nope/approve`, { 'x-user': 'mallory' })
    assert.equal(theirs.status, 403)
    assert.equal(theirs.text, missing.text)
    // An admin who may not decide sees the item (no form, and why); a refused post is an
    // alert on the item's page (tests/admin_deciders.spec.ts).
    const view = await fetch(`${url}/admin/items/${item.runId}/${item.itemId}?park=1`, {
      headers: { 'x-admin': 'yes', 'x-user': 'mallory' },
    }).then(readResponse)
    assert.equal(view.status, 200)
    assert.include(view.text, 'You may not decide this item.')
    assert.notInclude(view.text, '<form method="post"')
    assert.equal(await snapshot(), before)
  })
})
