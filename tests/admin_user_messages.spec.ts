import { readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { test } from '@japa/runner'
import type { Page } from 'playwright-core'
import type { AgentRunner } from '../src/runner/contract.js'
import { launchBrowser } from './helpers/browser.js'
import { resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'

const ADMIN = { 'x-admin': 'yes', 'x-user': 'alice' }
const AXE = readFileSync(new URL('../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8')
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
/** What the person says: markup and script, and a right-to-left override. */
const SAID = `Mail the team <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> re \u202Egnp.exe\u202C`
/** The same as the console shows it: each bidi control as a visible marker. */
const SAID_SHOWN = SAID.replace('\u202E', '[U+202E]').replace('\u202C', '[U+202C]')
const FILE_NAME = 'dot<b>.png'

/** Asks approval of `send_email` before saying anything: the person's message is all there is. */
const runner: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call-1',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume() {
    return { status: 'finished' }
  },
}

async function setup() {
  const served = await serveApp({ runner })
  await resetTables(await served.app.container.make('lucid.db'))
  return served
}

/** Axe-core's serious and critical violations on the page (its CSP bypassed for the engine). */
async function seriousViolations(page: Page) {
  await page.evaluate(AXE)
  const result: any = await page.evaluate(() => (globalThis as any).axe.run())
  return result.violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
}

/** Nothing the person said became markup, nor ran; no file's bytes are on the page. */
async function assertInert(assert: any, page: Page) {
  assert.equal(await page.locator('main script, main img').count(), 0)
  assert.isUndefined(await page.evaluate(() => (globalThis as any).pwned))
  const html = await page.content()
  assert.notInclude(html, PNG_BASE64)
  assert.notInclude(html, 'data:image/png')
  assert.notMatch(await page.locator('main').innerText(), /[\u202A-\u202E\u2066-\u2069]/)
}

test.group("Admin console: the person's messages", () => {
  test("shown as the person's on the item page and the run view, as text; the doors never send them", async ({
    assert,
  }) => {
    const served = await setup()
    const { url, agentStream } = served
    // The useChat door: a text part and a file part (a data: URL).
    const chatId = `chat-${randomUUID()}`
    const chat = await postJson(`${url}/chat`, {
      id: chatId,
      trigger: 'submit-message',
      messages: [
        {
          id: 'u0',
          role: 'user',
          parts: [
            { type: 'text', text: SAID },
            {
              type: 'file',
              mediaType: 'image/png',
              url: `data:image/png;base64,${PNG_BASE64}`,
              filename: FILE_NAME,
            },
          ],
        },
      ],
    })
    assert.equal(chat.status, 200)
    const chatBody = await chat.text()
    // The AG-UI door: a text message in a new thread.
    const aguiRun = `run-${randomUUID()}`
    const agui = await postJson(`${url}/agui`, {
      ...runInput(`thread-${randomUUID()}`, aguiRun),
      messages: [{ id: 'm0', role: 'user', content: `AG-UI: ${SAID}` }],
    })
    assert.equal(agui.status, 200)
    const aguiBody = await agui.text()
    await agentStream.driver.settled()
    // Neither door sent what the person said back as the agent's output.
    for (const body of [chatBody, aguiBody]) {
      assert.include(body, 'call-1', 'the answer asks for the approval')
      assert.notInclude(body, 'Mail the team')
      assert.notInclude(body, 'user-message')
      assert.notInclude(body, PNG_BASE64)
    }

    const items = await agentStream.parking.queries.list({ status: 'pending' })
    assert.lengthOf(items, 2)
    const chatItem = items.find((item) => item.threadId === chatId)!
    const aguiItem = items.find((item) => item.streamRunId === aguiRun)!
    const page = await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    const tab = await page.newPage()
    const errors: string[] = []
    tab.on('pageerror', (error) => errors.push(error.message))

    // The item page: the conversation up to the ask holds the person's message, then the ask.
    const itemPath = (item: (typeof items)[number]) =>
      `${url}/admin/items/${item.runId}/${item.itemId}?park=${item.park}`
    await tab.goto(itemPath(chatItem))
    const conversation = tab.locator('.conversation')
    await conversation.waitFor()
    const said = conversation.locator('.said')
    assert.equal(await said.count(), 1)
    assert.equal(await said.getAttribute('aria-label'), 'The person said')
    assert.equal(await said.locator('.say').innerText(), SAID_SHOWN)
    assert.equal(await said.locator('.file').innerText(), `File ${FILE_NAME}, image/png`)
    assert.notInclude(await conversation.innerText(), 'Nothing was said before this ask.')
    // In stream order: what the person said, then the ask.
    const blocks = await conversation
      .locator(':scope > *')
      .evaluateAll((nodes) => nodes.map((node) => (node as any).className as string))
    assert.deepEqual(blocks, ['said', 'ask'])
    await assertInert(assert, tab)
    assert.deepEqual(await seriousViolations(tab), [])

    await tab.goto(itemPath(aguiItem))
    assert.equal(await tab.locator('.conversation .said .say').innerText(), `AG-UI: ${SAID_SHOWN}`)

    // The run view: the transcript starts with the person's message.
    await tab.goto(`${url}/admin/runs/${chatItem.streamRunId}`)
    const transcript = tab.locator('.transcript')
    await transcript.waitFor()
    const first = transcript.locator(':scope > *').first()
    assert.equal(await first.getAttribute('class'), 'said')
    assert.include(await first.locator('.say').innerText(), 'Mail the team <script>')
    assert.equal(await first.locator('.file').innerText(), `File ${FILE_NAME}, image/png`)
    assert.include(await transcript.innerText(), 'Asked to approve send_email')
    await assertInert(assert, tab)
    assert.deepEqual(await seriousViolations(tab), [])
    assert.deepEqual(errors, [])
  }).timeout(180_000)
})
