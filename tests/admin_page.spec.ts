import { test } from '@japa/runner'
import { getActiveTest } from '@japa/runner'
import { chromium, type Browser } from 'playwright-core'
import type { AgentRunner } from '../src/runner/contract.js'
import { tableNames } from '../src/store/schema.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'

const HOSTILE = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`

/** Parks on one approval whose input and copy carry markup and script; then finishes. */
const hostileAgent: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({ t: 'text', v: 'Asking. ' })
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call-1',
      toolName: 'send_email',
      input: { to: 'team@example.com', body: HOSTILE },
      confirmation: { title: `Send ${HOSTILE}?`, description: 'Emails the team.' },
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume(ctx) {
    await ctx.writer.write({ t: 'text', v: `Decision: ${ctx.items[0].status}.` })
    return { status: 'finished' }
  },
}

async function browser(): Promise<Browser> {
  const launched = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  })
  getActiveTest()?.cleanup(() => launched.close())
  return launched
}

/** Open the queue, then its first item (the item view). */
async function openFirst(page: import('playwright-core').Page, url: string) {
  await page.goto(`${url}/admin`)
  await page.locator('#list a.open').first().click()
  await page.locator('article.item').waitFor()
}

async function setup(runner: AgentRunner = hostileAgent) {
  const served = await serveApp({ runner })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const started = await fetch(`${served.url}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify({ message: 'go' }),
  })
  const { runId } = (await started.json()) as { runId: string }
  await served.agentStream.driver.settled()
  const snapshot = async () => {
    const out: Record<string, unknown[]> = {}
    for (const table of Object.values(tableNames())) {
      out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
    }
    return JSON.stringify(out)
  }
  return { ...served, runId, snapshot }
}

test.group('Admin page in Chromium', () => {
  test('a person approves a parked call in the page and the run continues', async ({ assert }) => {
    const { url, runId, agentStream } = await setup()
    const context = await (
      await browser()
    ).newContext({
      extraHTTPHeaders: { 'x-admin': 'yes', 'x-user': 'alice' },
    })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await openFirst(page, url)
    const card = page.locator('article.item')
    if (process.env.SCREENSHOT)
      await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true })
    assert.include(await card.innerText(), runId)
    assert.include(await card.locator('pre.input').innerText(), '"to": "team@example.com"')
    await card.locator('form[action$="/approve"] input[name=reason]').fill('looks right')
    await card.locator('form[action$="/approve"] button').click()
    await page.locator('.notice').waitFor()
    assert.equal(await page.locator('.notice').innerText(), 'Approved: the run continues.')
    await agentStream.driver.settled()
    const text: string[] = []
    for await (const frame of agentStream.sink.subscribe(runId)) {
      if (frame.t === 'text') text.push(frame.v)
    }
    assert.equal(text.join(''), 'Asking. Decision: approved.')
    // The history view shows who decided and how.
    await page.goto(`${url}/admin/history`)
    const row = await page.locator('#list tbody tr').first().innerText()
    for (const part of ['send_email', 'approved', 'admin', 'alice', 'looks right']) {
      assert.include(row, part)
    }
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('markup and script in an input render as text and run nothing', async ({ assert }) => {
    const { url } = await setup()
    const context = await (
      await browser()
    ).newContext({
      extraHTTPHeaders: { 'x-admin': 'yes', 'x-user': 'alice' },
    })
    const page = await context.newPage()
    await openFirst(page, url)
    assert.include(await page.locator('pre.input').innerText(), HOSTILE.replace(/"/g, '\\"'))
    assert.include(await page.locator('.copy').innerText(), `Send ${HOSTILE}?`)
    assert.equal(await page.locator('article.item script, article.item img').count(), 0)
    // Give an injected handler every chance to fire, including after a live refresh.
    await page.waitForTimeout(2500)
    assert.isUndefined(await page.evaluate(() => (globalThis as any).pwned))
  }).timeout(120_000)

  test('denied without the admin hook (403); a form without its token changes nothing', async ({
    assert,
  }) => {
    const { url, runId, snapshot, agentStream } = await setup()
    const denied = await fetch(`${url}/admin`, { headers: { 'x-user': 'alice' } })
    assert.equal(denied.status, 403)
    const [item] = await agentStream.parking.queries.list({ streamRunId: runId })
    const before = await snapshot()
    const forged = await fetch(`${url}/admin/items/${item.runId}/${item.itemId}/approve`, {
      method: 'POST',
      headers: {
        'x-admin': 'yes',
        'x-user': 'alice',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'park=1&agent_stream_csrf=guess',
      redirect: 'manual',
    })
    assert.equal(forged.status, 403)
    assert.equal(await snapshot(), before)
  }).timeout(120_000)
})

/** A title that reads "Pay invoice $1000" when its right-to-left override acts. */
const SPOOF = 'Pay invoice \u202E0001$\u202C'

/** Parks on one approval whose every shown value carries bidi overrides; then finishes. */
const bidiAgent: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call-1',
      toolName: 'pay\u202Ename',
      input: { amount: '\u202E0001$' },
      confirmation: { title: SPOOF, description: 'to \u2067evil\u2069 ltd' },
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume() {
    return { status: 'finished' }
  },
}

/** A question set whose ids and option values hold the form syntax's own characters. */
const questionAgent: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({
      t: 'elicitation',
      runId: ctx.runId,
      id: 'ask-1',
      request: {
        id: 'ask-1',
        source: 'ask',
        questions: [
          {
            id: 'a.b',
            prompt: 'Which ones?',
            multiple: true,
            options: [
              { value: 'v.1', label: 'First' },
              { value: ' pad ', label: 'Padded' },
              { value: 'c[0]', label: 'Third' },
            ],
          },
          {
            id: 'x]y',
            prompt: 'Which one?',
            options: [
              { value: 'w]2', label: 'Bracket' },
              { value: 'plain', label: 'Plain' },
            ],
            defaults: ['plain'],
          },
          { id: 'n[o]te', prompt: 'Anything else?', options: [], allowFreeText: true },
        ],
      },
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume(ctx) {
    await ctx.writer.write({ t: 'text', v: `Answers: ${JSON.stringify(ctx.items[0].answers)}` })
    return { status: 'finished' }
  },
}

/**
 * Whether the characters of `needle` are laid out left to right in the order they were written,
 * in the first text node under `selector` that holds it (the browser's own layout, one range per
 * character).
 */
function laidOutInOrder(page: import('playwright-core').Page, selector: string, needle: string) {
  return page.evaluate(
    ([css, text]) => {
      // Runs in the page (the suite compiles without the DOM library).
      const { document, NodeFilter } = globalThis as any
      const root = document.querySelector(css)
      if (!root) return 'no element'
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.textContent!.indexOf(text)
        if (at < 0) continue
        const lefts = [...text].map((_, i) => {
          const range = document.createRange()
          range.setStart(node!, at + i)
          range.setEnd(node!, at + i + 1)
          return range.getBoundingClientRect().left
        })
        return lefts.every((left, i) => i === 0 || left > lefts[i - 1]) ? 'in order' : 'reordered'
      }
      return 'not found'
    },
    [selector, needle] as const
  )
}

test.group('Admin page in Chromium: bidi and form encoding', () => {
  test('bidi overrides in a title, a tool name, an input: shown, isolated, in written order', async ({
    assert,
  }) => {
    const { url } = await setup(bidiAgent)
    const context = await (
      await browser()
    ).newContext({ extraHTTPHeaders: { 'x-admin': 'yes', 'x-user': 'alice' } })
    const page = await context.newPage()
    await openFirst(page, url)
    if (process.env.SCREENSHOT)
      await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true })
    // The title renders as written, never as "Pay invoice $1000", and says it held an override.
    assert.equal(await laidOutInOrder(page, '.copy strong', '0001$'), 'in order')
    const title = await page.locator('.copy strong').innerText()
    assert.include(title, 'Pay invoice [U+202E]0001$[U+202C]')
    assert.notInclude(title, '\u202E')
    assert.equal(await laidOutInOrder(page, 'h1 code', 'name'), 'in order')
    assert.equal(await laidOutInOrder(page, 'pre.input', '0001$'), 'in order')
    assert.include(await page.locator('.copy').innerText(), 'to [U+2067]evil[U+2069] ltd')
    // Each value sits in its own isolate: nothing in it reorders the page around it.
    for (const selector of ['.copy strong', 'h1 code', 'pre.input', 'dd code']) {
      const isolated = await page
        .locator(selector)
        .first()
        .evaluate((element) => {
          const bdi = element.querySelector('bdi')
          return bdi ? (globalThis as any).getComputedStyle(bdi).unicodeBidi : 'none'
        })
      assert.equal(isolated, 'isolate', selector)
    }
  }).timeout(120_000)

  test('question ids with "." and "]" and option values with form syntax are answered from the page', async ({
    assert,
  }) => {
    const { url, runId, agentStream } = await setup(questionAgent)
    const context = await (
      await browser()
    ).newContext({ extraHTTPHeaders: { 'x-admin': 'yes', 'x-user': 'alice' } })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await openFirst(page, url)
    const form = page.locator('form[action$="/answer"]')
    await form.waitFor()
    await form.getByLabel('First').check()
    await form.getByLabel('Padded').check()
    await form.getByLabel('Third').check()
    await form.getByLabel('Bracket').check()
    await form.getByLabel('Anything else?').fill('see [1].')
    await form.locator('button').click()
    await page.locator('.notice').waitFor()
    assert.equal(await page.locator('.notice').innerText(), 'Answered: the run continues.')
    await agentStream.driver.settled()
    const text: string[] = []
    for await (const frame of agentStream.sink.subscribe(runId)) {
      if (frame.t === 'text') text.push(frame.v)
    }
    assert.equal(
      text.join(''),
      `Answers: ${JSON.stringify({ 'a.b': ['v.1', ' pad ', 'c[0]'], 'x]y': ['w]2'], 'n[o]te': ['see [1].'] })}`
    )
    assert.deepEqual(errors, [])
  }).timeout(120_000)
})
