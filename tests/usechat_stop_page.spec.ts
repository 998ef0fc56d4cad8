import { test } from '@japa/runner'
import type { Page } from 'playwright-core'
import type { Database } from '@adonisjs/lucid/database'
import { heldRunner } from './helpers/held_runner.js'
import { queued, rowsOf } from './helpers/busy_thread.js'
import { noError, openPage, said, send, textOf } from './helpers/usechat_page.js'
import { tableNames } from '../src/store/schema.js'
import { RunList } from '../src/store/run_list.js'

/**
 * Run control with the real `useChat` in Chromium (the demo's page): its Stop button (the chat's
 * stop route, then `stop()`, as docs/run-control.md shows) and a message sent while a turn talks
 * under each `multitaskStrategy` the page's transport puts in its `body`. The agent holds each
 * `hold …` message on a gate after its first words, until the test opens it or its signal aborts
 * (`tests/helpers/held_runner.ts`); every gate is opened in the test's cleanup.
 */

const AFTER = ' and the rest.'
const tables = tableNames()

/** The page once its turn is over: its status `ready`. */
const ready = (page: Page) => page.locator('#status', { hasText: 'ready' }).waitFor()

/** The page shows `text` in an answer. */
const shows = (page: Page, text: string) =>
  page.locator('.assistant .text', { hasText: text }).waitFor()

/** Type `text` and click Send now, the turn still talking (the page lets a person do it). */
async function sendWhileTalking(page: Page, text: string) {
  await page.fill('#message', text)
  await page.getByRole('button', { name: 'Send' }).click()
}

/** How each turn of `chatId` ended, oldest first: the status the runs list derives. */
async function turnsOf(db: Database, chatId: string) {
  const runs = await new RunList(() => db.connection(), tables).list({ threadId: chatId })
  return runs.reverse().map((run) => run.status)
}

/** What the page shows: every message the person sent, every answer, in order. */
const conversation = async (page: Page) => ({
  user: await said(page, 'user'),
  assistant: await said(page, 'assistant'),
})

test.group('useChat page in Chromium: stop and a busy thread', () => {
  test('Stop mid-answer: the agent aborted, the partial answer kept (reload too), the turn closed, the next one answered', async ({
    assert,
    cleanup,
  }) => {
    const held = heldRunner({ after: AFTER })
    const { page, errors, served, chatId } = await openPage(held.runner)
    cleanup(() => held.releaseAll())
    const db: Database = await served.app.container.make('lucid.db')
    await send(page, 'hold A')
    await shows(page, 'answer to hold A')
    const stopped = page.waitForResponse(
      (response) => new URL(response.url()).pathname === `/chat/${chatId}/stop`
    )
    await page.getByRole('button', { name: 'Stop' }).click()
    const answer = await stopped
    assert.equal(answer.request().method(), 'POST')
    assert.deepEqual([answer.status(), await answer.json()], [200, { status: 'cancelled' }])
    await ready(page)
    // The agent was told (its signal aborted: `stop()` alone only ends the request), and wrote
    // nothing after its gate; the turn ended cancelled with what it had said.
    assert.deepEqual(held.aborted, ['hold A'])
    assert.deepEqual(held.log, ['start:hold A', 'end:hold A'])
    assert.deepEqual(await turnsOf(db, chatId), ['cancelled'])
    assert.equal(await textOf(page), 'answer to hold A')
    assert.isTrue(await page.getByRole('button', { name: 'Stop' }).isDisabled())
    // Reloaded: the stored chat holds the partial answer, and no turn is in flight to resume.
    await page.reload()
    await page.locator('.user', { hasText: 'hold A' }).waitFor()
    await ready(page)
    assert.deepEqual(await conversation(page), {
      user: ['hold A'],
      assistant: ['answer to hold A'],
    })
    // The next message starts cleanly and is answered.
    await send(page, 'B')
    await shows(page, 'answer to B')
    await ready(page)
    assert.deepEqual(await conversation(page), {
      user: ['hold A', 'B'],
      assistant: ['answer to hold A', 'answer to B'],
    })
    assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:B', 'end:B'])
    assert.deepEqual(await turnsOf(db, chatId), ['cancelled', 'finished'])
    await noError(assert, page, errors)
  }).timeout(60_000)

  test('enqueue (the door default): the second message waits, runs after the first answer, both in order', async ({
    assert,
    cleanup,
  }) => {
    const held = heldRunner({ after: AFTER, conversation: true })
    const { page, errors, served, chatId } = await openPage(held.runner)
    cleanup(() => held.releaseAll())
    const db: Database = await served.app.container.make('lucid.db')
    await send(page, 'hold A')
    await shows(page, 'answer to hold A')
    await sendWhileTalking(page, 'B')
    await queued(db, chatId, 1)
    // Waiting: nothing of B ran, and the page shows no answer to it yet.
    assert.deepEqual(held.log, ['start:hold A'])
    assert.notInclude((await said(page, 'assistant')).join('|'), 'answer to B')
    held.release('hold A')
    await shows(page, 'answer to B')
    await ready(page)
    const expected = {
      user: ['hold A', 'B'],
      assistant: [`answer to hold A${AFTER}`, 'answer to B'],
    }
    assert.deepEqual(await conversation(page), expected)
    assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:B', 'end:B'])
    assert.equal(held.maxActive, 1)
    assert.deepEqual(held.aborted, [])
    // B's turn saw the whole first turn: they never crossed.
    assert.deepEqual(held.seen.B, ['hold A', `answer to hold A${AFTER}`])
    assert.deepEqual(await turnsOf(db, chatId), ['finished', 'finished'])
    await page.reload()
    await page.locator('.user', { hasText: 'B' }).waitFor()
    assert.deepEqual(await conversation(page), expected)
    await noError(assert, page, errors)
  }).timeout(60_000)

  test('reject: the page shows the 409 thread_busy, nothing is stored, the first turn goes on', async ({
    assert,
    cleanup,
  }) => {
    const held = heldRunner({ after: AFTER })
    const { page, errors, served, chatId } = await openPage(held.runner, {
      multitaskStrategy: 'reject',
    })
    cleanup(() => held.releaseAll())
    const db: Database = await served.app.container.make('lucid.db')
    await send(page, 'hold A')
    await shows(page, 'answer to hold A')
    const before = await rowsOf(db)
    const refused = page.waitForResponse(
      (response) =>
        new URL(response.url()).pathname === '/chat' && response.request().method() === 'POST'
    )
    await sendWhileTalking(page, 'B')
    const answer = await refused
    assert.equal(answer.status(), 409)
    assert.equal((await answer.json()).code, 'thread_busy')
    assert.include(await page.getByRole('alert').textContent(), 'thread_busy')
    assert.equal(await rowsOf(db), before)
    assert.deepEqual(held.log, ['start:hold A'])
    // The first turn goes on, to its end, on the page.
    held.release('hold A')
    await shows(page, AFTER.trim())
    await ready(page)
    assert.deepEqual(held.log, ['start:hold A', 'end:hold A'])
    assert.deepEqual(held.aborted, [])
    assert.deepEqual(await turnsOf(db, chatId), ['finished'])
    // Reloaded: the stored chat never had B.
    await page.reload()
    await page.locator('.user', { hasText: 'hold A' }).waitFor()
    await ready(page)
    assert.deepEqual(await conversation(page), {
      user: ['hold A'],
      assistant: [`answer to hold A${AFTER}`],
    })
    await noError(assert, page, errors)
  }).timeout(60_000)

  for (const strategy of ['interrupt', 'rollback'] as const) {
    const kept = strategy === 'interrupt'
    test(`${strategy}: the first turn stopped (${kept ? 'kept in the history' : 'gone from the history and the agent’s conversation'}), the second answered`, async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner({ after: AFTER, conversation: true })
      const { page, errors, served, chatId } = await openPage(held.runner, {
        multitaskStrategy: strategy,
      })
      cleanup(() => held.releaseAll())
      const db: Database = await served.app.container.make('lucid.db')
      await send(page, 'hold A')
      await shows(page, 'answer to hold A')
      await sendWhileTalking(page, 'B')
      await shows(page, 'answer to B')
      await ready(page)
      // The first turn was stopped (its agent's signal aborted), then B ran: never both at once.
      assert.deepEqual(held.aborted, ['hold A'])
      assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:B', 'end:B'])
      assert.equal(held.maxActive, 1)
      assert.deepEqual(await turnsOf(db, chatId), ['cancelled', 'finished'])
      // The page shows what it saw, the partial first answer too.
      assert.deepEqual(await conversation(page), {
        user: ['hold A', 'B'],
        assistant: ['answer to hold A', 'answer to B'],
      })
      // What B's agent was given, and the stored chat: with the stopped turn, or without it.
      assert.deepEqual(held.seen.B, kept ? ['hold A', 'answer to hold A'] : [])
      await page.reload()
      await page.locator('.user', { hasText: 'B' }).waitFor()
      await ready(page)
      assert.deepEqual(
        await conversation(page),
        kept
          ? { user: ['hold A', 'B'], assistant: ['answer to hold A', 'answer to B'] }
          : { user: ['B'], assistant: ['answer to B'] }
      )
      await noError(assert, page, errors)
    }).timeout(60_000)
  }
})
