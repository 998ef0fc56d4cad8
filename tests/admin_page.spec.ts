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

async function setup() {
  const served = await serveApp({ runner: hostileAgent })
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
    await page.goto(`${url}/admin`)
    const card = page.locator('article.item')
    await card.waitFor()
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
    await page.goto(`${url}/admin?view=decided`)
    assert.include(
      await page.locator('.decided').innerText(),
      'approved by alice via admin: looks right'
    )
    assert.deepEqual(errors, [])
  })

  test('markup and script in an input render as text and run nothing', async ({ assert }) => {
    const { url } = await setup()
    const context = await (
      await browser()
    ).newContext({
      extraHTTPHeaders: { 'x-admin': 'yes', 'x-user': 'alice' },
    })
    const page = await context.newPage()
    await page.goto(`${url}/admin`)
    await page.locator('article.item').waitFor()
    assert.include(await page.locator('pre.input').innerText(), HOSTILE.replace(/"/g, '\\"'))
    assert.include(await page.locator('.copy').innerText(), `Send ${HOSTILE}?`)
    assert.equal(await page.locator('article.item script, article.item img').count(), 0)
    // Give an injected handler every chance to fire, including after a live refresh.
    await page.waitForTimeout(2500)
    assert.isUndefined(await page.evaluate(() => (globalThis as any).pwned))
  })

  test('denied without the admin hook (403); a form without its token changes nothing', async ({
    assert,
  }) => {
    const { url, runId, snapshot, agentStream } = await setup()
    const denied = await fetch(`${url}/admin`, { headers: { 'x-user': 'alice' } })
    assert.equal(denied.status, 403)
    const [item] = await agentStream.parking.list({ streamRunId: runId })
    const before = await snapshot()
    const forged = await fetch(`${url}/admin/items/${item.runId}/${item.itemId}/approve`, {
      method: 'POST',
      headers: {
        'x-admin': 'yes',
        'x-user': 'alice',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'park=1&_csrf=guess',
      redirect: 'manual',
    })
    assert.equal(forged.status, 403)
    assert.equal(await snapshot(), before)
  })
})
