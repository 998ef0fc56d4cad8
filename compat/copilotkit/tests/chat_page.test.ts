import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { copilotRuntime, demo, until } from './harness.ts'
import { FOLLOW_UP, HOLD, PARTIAL, STILL_HERE } from './held_model.ts'
import { bundlePage } from './page.ts'

/**
 * CopilotKit's React chat (`CopilotChat` + `useInterrupt`, react-core 1.74) in Chromium against
 * the demo app through CopilotKit's runtime and the package's runner: the approval card, the
 * stock resolve, the question set, the final text. Saves docs/copilotkit.png (README).
 */

const SCREENSHOT = fileURLToPath(new URL('../../../docs/copilotkit.png', import.meta.url))

let app: Awaited<ReturnType<typeof demo>>
let runtime: Awaited<ReturnType<typeof copilotRuntime>>
let browser: Browser

before(async () => {
  app = await demo({ tokensPerSecond: 60 })
  runtime = await copilotRuntime(app.agui, 'package', await bundlePage())
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  })
})
after(async () => {
  await browser?.close()
  await runtime?.stop()
  await app?.stop()
})

test('CopilotChat: approval card, stock resolve, question set, final text; a reload restores it', async () => {
  const page = await browser.newPage({ viewport: { width: 900, height: 760 } })
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  const threadId = `t-${crypto.randomUUID()}`
  await page.goto(`${runtime.origin}/?thread=${threadId}`)
  const input = page.getByTestId('copilot-chat-textarea')
  await input.waitFor({ timeout: 60_000 })
  await input.fill('Send the weekly report')
  await input.press('Enter')

  const card = page.locator('.approval-card')
  await card.waitFor({ timeout: 30_000 })
  assert.match(await card.innerText(), /Send the weekly report\?/)
  mkdirSync(fileURLToPath(new URL('.', `file://${SCREENSHOT}`)), { recursive: true })
  await page.screenshot({ path: SCREENSHOT })

  await card.getByRole('button', { name: 'Approve' }).click()
  const question = page.locator('.question-card')
  await question.waitFor({ timeout: 30_000 })
  await question.getByRole('button').click()
  await page.getByText('All done.').waitFor({ timeout: 30_000 })
  assert.doesNotMatch(await page.locator('body').innerText(), /Agent run failed/)

  // A reload (CopilotKit connects to the thread): the conversation comes back, in order.
  await page.reload()
  await page.getByText('All done.').waitFor({ timeout: 60_000 })
  const text = await page.locator('body').innerText()
  assert.ok(text.indexOf('Send the weekly report') < text.indexOf('All done.'))
  assert.deepEqual(errors, [])
  await page.close()
})

/** What CopilotKit reported to the page's `onError` since it loaded. */
const copilotErrors = (page: Page) => page.evaluate(() => (window as any).copilotErrors as string[])

test("CopilotChat's stop button mid-answer: the run stops in the package, the text stays, a reload restores it, the next message is answered", async () => {
  const page = await browser.newPage({ viewport: { width: 900, height: 760 } })
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  const threadId = `t-${crypto.randomUUID()}`
  const holds = app.held.holds.length
  try {
    await page.goto(`${runtime.origin}/?thread=${threadId}`)
    const input = page.getByTestId('copilot-chat-textarea')
    await input.waitFor({ timeout: 60_000 })
    await input.fill(HOLD)
    await input.press('Enter')
    await page.getByText(PARTIAL.trim()).waitFor({ timeout: 30_000 })
    await until(() => app.held.holds.length === holds + 1, 'the held answer')

    // While the run talks, the send button is CopilotChat's stop button (a square).
    const button = page.getByTestId('copilot-send-button')
    await button.locator('.lucide-square').waitFor({ timeout: 30_000 })
    await button.click()
    await until(() => app.held.holds[holds].aborted, "the agent's signal aborted")
    const db = await app.app.container.make('lucid.db')
    const run = await db.from('agent_agui_runs').where('thread_id', threadId).first()
    const stream = await db.from('agent_streams').where('run_id', run.stream_run_id).first()
    assert.equal(stream.stop_mode, 'keep')
    // The run ended in the chat: the button sends again.
    await button.locator('.lucide-arrow-up').waitFor({ timeout: 30_000 })
    assert.match(await page.locator('body').innerText(), new RegExp(PARTIAL.trim()))
    assert.deepEqual(await copilotErrors(page), [])

    // A reload restores the stopped answer; the next message is answered after it.
    await page.reload()
    await page.getByText(PARTIAL.trim()).waitFor({ timeout: 60_000 })
    await input.fill(FOLLOW_UP)
    await input.press('Enter')
    await page.getByText(STILL_HERE).waitFor({ timeout: 30_000 })
    const text = await page.locator('body').innerText()
    assert.ok(text.indexOf(PARTIAL.trim()) < text.indexOf(STILL_HERE))
    assert.doesNotMatch(text, /Agent run failed/)
    assert.deepEqual(await copilotErrors(page), [])
    assert.deepEqual(errors, [])
  } finally {
    app.held.release()
    await page.close()
  }
})
