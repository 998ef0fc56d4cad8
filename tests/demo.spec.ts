import { test } from '@japa/runner'
import { getActiveTest } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { startDemo } from '../demo/server.js'
import { runCheck } from '../demo/check.js'
import { runEmailCheck } from '../demo/email_check.js'
import { AGENT_NAMES } from '../demo/agents/index.js'
import { launchBrowser } from './helpers/browser.js'

// The demo runs on its own SQLite file whatever database the suite is on: bin/test.ts runs this
// file with DB=sqlite only (tests/sqlite_only.ts).

// One bubble per model step: the AI SDK agent says the format and "All done." in one response.
const FULL_TEXT = [
  'Let me look at this week. ',
  'Revenue was 42. ',
  'Sent. ',
  'Format: csv. All done.',
]

/** The demo app on a free port and a private SQLite file, stopped after the test. */
async function demo() {
  const dbFile = join(tmpdir(), `agent-stream-demo-${randomUUID()}.sqlite3`)
  const started = await startDemo({ port: 0, quiet: true, dbFile, model: 'scripted' })
  getActiveTest()?.cleanup(async () => {
    await started.stop()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true })
  })
  return started
}

/** A page on the chat, recording every state the first assistant bubble went through. */
async function chatPage(url: string) {
  const browser = await launchBrowser()
  const context = await browser.newContext()
  const page = await context.newPage()
  // Page code as strings: the suite type-checks without the DOM library.
  await page.addInitScript(`
    window.firstBubble = []
    new MutationObserver(() => {
      const text = document.querySelector('.assistant')?.textContent
      if (text && window.firstBubble.at(-1) !== text) window.firstBubble.push(text)
    }).observe(document, { subtree: true, childList: true, characterData: true })
  `)
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(url)
  return { page, context, errors }
}

async function send(page: Page, text: string) {
  await page.fill('input[name=message]', text)
  await page.click('#composer button[type=submit]')
}

async function answerQuestions(page: Page) {
  const answer = page.getByRole('button', { name: 'Answer' })
  await answer.waitFor()
  await page.check('input[name=format][value=csv]')
  await page.fill('input[name=note]', 'Thanks')
  await answer.click()
}

async function done(page: Page) {
  await page.locator('#status', { hasText: /^Done\.$/ }).waitFor()
  return {
    bubbles: await page.locator('.assistant').allTextContents(),
    tools: await page.locator('.tool').allTextContents(),
    page: await page.locator('#log').textContent(),
  }
}

test.group('Demo', () => {
  for (const agent of AGENT_NAMES.filter((name) => name !== 'ai-sdk')) {
    test(`npm run demo -- --agent ${agent} --check: the email scenario with HttpAgent, the admin page, useChat`, async ({
      assert,
    }) => {
      const lines: string[] = []
      await runEmailCheck(agent, { log: (line) => lines.push(line), timeoutMs: 50_000 })
      assert.include(lines.at(-1), 'useChat: approved, then "You asked: Send the weekly report')
    }).timeout(60_000)
  }

  test('npm run demo -- --agent with an unknown name: an error naming the agents there are', async ({
    assert,
  }) => {
    await assert.rejects(
      () => startDemo({ port: 0, quiet: true, agent: 'nope' }),
      /unknown --agent "nope": one of ai-sdk, /
    )
  })

  test('npm run demo -- --check: the whole scenario with the official AG-UI client', async ({
    assert,
  }) => {
    const lines: string[] = []
    const report = await runCheck({ log: (line) => lines.push(line), timeoutMs: 50_000 })
    assert.equal(report.finalText, 'Format: csv. All done.')
    assert.equal(report.continuationText, 'Sent. ')
    assert.equal(report.clientText, FULL_TEXT.join(''))
    for (const step of [
      'run started',
      'cut mid-message at ',
      're-attached: ',
      'interrupt: tool_call send_email',
      'approved via admin',
      'resumed',
      'interrupt: input_required',
      'finished: "Format: csv. All done."',
    ]) {
      assert.isTrue(
        lines.some((line) => line.startsWith(step)),
        `missing step "${step}" in:\n${lines.join('\n')}`
      )
    }
  }).timeout(60_000)

  test('the chat page in Chromium: streamed text, tool calls, approve, answer, done', async ({
    assert,
  }) => {
    const { chatUrl } = await demo()
    const { page, errors } = await chatPage(chatUrl)
    assert.equal(
      await page.getByRole('link', { name: 'Admin page' }).getAttribute('href'),
      '/agent/admin'
    )
    await send(page, 'Send the weekly report')
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    assert.include(
      await page.locator('.interrupt').first().textContent(),
      'Send the weekly report?'
    )
    await page.getByRole('button', { name: 'Approve' }).click()
    await answerQuestions(page)
    const result = await done(page)

    assert.deepEqual(result.bubbles, FULL_TEXT)
    assert.lengthOf(result.tools, 2)
    assert.include(result.tools[0], 'search')
    assert.include(result.tools[0], '{"q":"weekly numbers"}')
    assert.include(result.tools[0], '{"revenue":42}')
    assert.include(result.tools[1], 'send_email')
    assert.include(result.tools[1], '"sent":true')
    assert.include(result.page, 'Approved.')
    assert.include(result.page, 'format: csv; note: Thanks')
    // Streamed: the first message grew in several steps, each a prefix of the whole.
    const states = (await page.evaluate('window.firstBubble')) as string[]
    assert.isAbove(states.length, 1)
    for (const state of states) assert.isTrue(FULL_TEXT[0].startsWith(state), state)

    // A second message in the same thread is a new run: it streams and parks again.
    await send(page, 'Once more')
    await page.getByRole('button', { name: 'Approve' }).and(page.locator(':enabled')).waitFor()
    assert.lengthOf(await page.locator('.assistant').allTextContents(), FULL_TEXT.length + 2)
    assert.deepEqual(errors, [])
  }).timeout(60_000)

  test('the chat page re-attaches after every response is cut mid-message: the text once', async ({
    assert,
  }) => {
    const { chatUrl } = await demo()
    const { page, errors } = await chatPage(chatUrl)
    // Each POST's SSE body ends right after its first text delta, as if the network dropped.
    let cuts = 0
    await page.route('**/agent/agui', async (route) => {
      if (route.request().method() !== 'POST') return route.continue()
      const response = await route.fetch()
      const blocks = (await response.text()).split('\n\n')
      const at = blocks.findIndex((block) => block.includes('"TEXT_MESSAGE_CONTENT"'))
      if (at >= 0) cuts++
      const body = at < 0 ? blocks.join('\n\n') : `${blocks.slice(0, at + 1).join('\n\n')}\n\n`
      await route.fulfill({ response, body })
    })
    const reattached: string[] = []
    page.on('request', (request) => {
      if (request.url().includes('/agent/agui/runs/')) reattached.push(request.url())
    })
    await send(page, 'Send the weekly report')
    await page.getByRole('button', { name: 'Approve' }).click()
    await answerQuestions(page)
    const result = await done(page)

    assert.equal(cuts, 3)
    assert.lengthOf(reattached, 3)
    for (const url of reattached)
      assert.match(url, /\/agent\/agui\/runs\/[^/?]+\?after=\d+(\.\d+)?$/)
    assert.deepEqual(result.bubbles, FULL_TEXT)
    assert.lengthOf(result.tools, 2)
    assert.equal(result.page!.split('All done.').length - 1, 1)
    assert.deepEqual(errors, [])
  }).timeout(60_000)

  test('the server ends every open stream mid-run (as on shutdown): the chat re-attaches, the text once', async ({
    assert,
  }) => {
    const started = await demo()
    const { page, errors } = await chatPage(started.chatUrl)
    const reattached: string[] = []
    page.on('request', (request) => {
      if (request.url().includes('/agent/agui/runs/')) reattached.push(request.url())
    })
    const posted = page.waitForResponse(
      (response) => response.url().endsWith('/agent/agui') && response.request().method() === 'POST'
    )
    await send(page, 'Send the weekly report')
    await posted
    // The run's stream is open: it ends, no RUN_FINISHED, no RUN_ERROR.
    started.agentStream.http.closeAll()
    await page.getByRole('button', { name: 'Approve' }).click()
    await answerQuestions(page)
    const result = await done(page)
    assert.lengthOf(reattached, 1)
    assert.deepEqual(result.bubbles, FULL_TEXT)
    assert.lengthOf(result.tools, 2)
    assert.deepEqual(errors, [])
  }).timeout(60_000)

  test('approved on the admin page: the chat catches up by thread (the first decision wins)', async ({
    assert,
  }) => {
    const { chatUrl, adminUrl } = await demo()
    const { page, context, errors } = await chatPage(chatUrl)
    // The first attach by thread answers as if the run had not reopened its stream yet (the
    // parked run again, which the page already has): the page must skip it and ask again.
    let firstRunId = ''
    page.on('request', (request) => {
      if (request.method() === 'POST' && !firstRunId) firstRunId = request.postDataJSON().runId
    })
    const attaches: string[] = []
    await page.route('**/agent/agui/threads/**', async (route) => {
      attaches.push(route.request().url())
      if (attaches.length > 1) return route.continue()
      const url = new URL(route.request().url())
      url.pathname = `/agent/agui/runs/${firstRunId}`
      await route.fulfill({ response: await route.fetch({ url: url.href }) })
    })
    await send(page, 'Send the weekly report')
    await page.getByRole('button', { name: 'Approve' }).waitFor()

    const admin = await context.newPage()
    await admin.goto(adminUrl)
    // The queue, then the item in context with its decision forms.
    await admin.locator('#list a.open').first().click()
    await admin.getByRole('button', { name: 'Approve' }).click()
    await admin.getByText('Approved: the run continues.').waitFor()

    // The chat's own answer comes second: refused, and the page follows the run by thread.
    await page.getByRole('button', { name: 'Reject' }).click()
    await answerQuestions(page)
    const result = await done(page)
    assert.deepEqual(result.bubbles, FULL_TEXT)
    assert.include(result.tools[1], '"sent":true')
    assert.lengthOf(attaches, 2)
    assert.include(result.page, 'Someone answered first.')
    assert.notInclude(result.page, 'Rejected.')
    assert.deepEqual(errors, [])
  }).timeout(60_000)
})
