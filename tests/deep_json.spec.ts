import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { textTooDeep, MAX_JSON_DEPTH } from '../src/core/json_depth.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { readResponse, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { adminForm, aguiInput, tablesSnapshot } from './helpers/decisions.js'

/**
 * Issue 21, item 9 (part): a body nested 5,000, 50,000 or 500,000 levels deep is refused by the
 * depth rule on every route that takes JSON, a clean 4xx `{ code, message }` (the admin form: its
 * own refusal), never a 500 (a recursive walk or `JSON.stringify` out of stack), no row changed.
 */

const LEVELS = [5_000, 50_000, 500_000]

/** `[[[...]]]` nested `levels` deep (2 bytes a level: 500,000 levels stay under 1 MiB). */
const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`

/** A clean refusal: a 4xx whose body is `{ code, message }`, both strings. */
function assertRefused(
  assert: any,
  answer: { status: number; json: any; text: string },
  what: string
) {
  assert.isAtLeast(answer.status, 400, `${what}: ${answer.text.slice(0, 200)}`)
  assert.isBelow(answer.status, 500, `${what}: ${answer.text.slice(0, 200)}`)
  assert.isString(answer.json?.code, what)
  assert.isString(answer.json?.message, what)
}

test.group('Item 9: too deep is refused before anything walks it', () => {
  test('the depth rule on text: one linear scan, strings and escapes skipped', ({ assert }) => {
    const nested = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`
    assert.isFalse(textTooDeep(nested(MAX_JSON_DEPTH)))
    assert.isTrue(textTooDeep(nested(MAX_JSON_DEPTH + 1)))
    assert.isTrue(textTooDeep(deep(500_000)))
    // Brackets inside strings are text, an escaped quote does not end one.
    assert.isFalse(textTooDeep(JSON.stringify({ a: '['.repeat(1000), b: '\\"[[[[' })))
    assert.isFalse(textTooDeep(JSON.stringify(['"', '[', '\\', '{'.repeat(200)])))
  })

  test('the admin form: an edited input nested that deep is refused (its notice), no row changed', async ({
    assert,
  }) => {
    // The case: 2,000 levels were refused, 5,000 answered 500 (the form compared the
    // parsed edit with the asked input by `JSON.stringify`, out of stack).
    const served = await serveApp({ runner: scriptedAgent({ steps: ['approval'] }) })
    const db = await served.app.container.make('lucid.db')
    await resetTables(db)
    const threadId = `t-${randomUUID()}`
    await readResponse(
      await fetch(`${served.url}/agui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body: JSON.stringify(aguiInput(threadId)),
      })
    )
    await served.agentStream.driver.settled()
    const [approval] = await served.agentStream.parking.queries.list({ threadId })
    const form = await adminForm(served.url, approval)
    const before = await tablesSnapshot(db)
    for (const levels of [2_000, ...LEVELS]) {
      // As a browser sends the field (brackets need no escaping in a form body).
      const edited = await form.post(
        'approve',
        `agent_stream_csrf=${encodeURIComponent(form.csrf)}&park=${approval.park}&input=${deep(levels)}`
      )
      assert.equal(edited.status, 303, `admin form at ${levels}: ${edited.text.slice(0, 200)}`)
      assert.include(edited.location, 'notice=E_INVALID_DECISION', `at ${levels}`)
    }
    await served.agentStream.driver.settled()
    assert.equal(await tablesSnapshot(db), before)
  })

  test('the Fetch handlers: a clean 4xx, no row changed', async ({ assert, cleanup }) => {
    const served = await serveRuntime(
      { runner: scriptedAgent({ steps: ['approval'] }) },
      (runtime, principal) => {
        const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
        const chat = createUiMessageFetchHandler(runtime.uiMessage, {
          basePath: '/agent',
          principal,
        })
        return (request) =>
          new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
      }
    )
    cleanup(served.close)
    const post = async (path: string, body: string) =>
      readResponse(
        await fetch(`${served.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user': 'alice' },
          body,
        })
      )
    const threadId = `t-${randomUUID()}`
    const started = await post('/agui', JSON.stringify(aguiInput(threadId)))
    const interrupt = parseSse(started.text).at(-1)!.event.outcome.interrupts[0]
    await served.runtime.driver.settled()
    for (const levels of LEVELS) {
      const value = deep(levels)
      const resume = JSON.stringify(
        aguiInput(threadId, { resume: [{ interruptId: interrupt.id, status: 'resolved' }] })
      ).replace('"status":"resolved"', `"status":"resolved","payload":${value}`)
      for (const [path, body] of [
        [
          '/agui',
          JSON.stringify(aguiInput(`t-${randomUUID()}`)).replace(/}$/, `,"state":${value}}`),
        ],
        ['/agui', resume],
        ['/agent/chat', `{"id":"c-${randomUUID()}","messages":${value}}`],
      ]) {
        assertRefused(assert, await post(path, body), `${path} at ${levels}`)
      }
    }
    await served.runtime.driver.settled()
    // Nothing was decided.
    const items = await served.runtime.parking.queries.list({ threadId })
    assert.deepEqual(
      items.map((item) => item.status),
      ['pending']
    )
  })
})
