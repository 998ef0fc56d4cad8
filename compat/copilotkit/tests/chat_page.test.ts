import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'
import { copilotRuntime, demo } from './harness.ts'
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
