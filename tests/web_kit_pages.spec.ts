import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { Page } from 'playwright-core'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { launchBrowser } from './helpers/browser.js'
import { cookieClient, serveWebKit } from './helpers/web_kit.js'

/**
 * The package's pages in Chromium inside an AdonisJS web app with session auth and shield's
 * stock config (`tests/helpers/web_kit.ts`): the demo's `useChat` page (React, `useChat`,
 * bundled with esbuild) and the admin console, each reached by signing in as a person would.
 */

/** Open `path` signed out: the app's login page comes, sign in as `email`, and back to `path`. */
async function signInAt(page: Page, url: string, path: string, email: string) {
  await page.goto(`${url}${path}`)
  await page.waitForURL((at) => at.pathname === '/login')
  await page.getByLabel('Email').fill(email)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((at) => `${at.pathname}${at.search}` === path)
}

/** A run of alice's parked on one approval (started through the API with shield's token). */
async function parkedRun(url: string, settled: () => Promise<void>) {
  const alice = cookieClient(url)
  await alice.signIn('alice@example.com')
  const started = await alice.fetch('/agent/runs', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-xsrf-token': alice.xsrf()! },
    body: JSON.stringify({ message: 'Send the weekly report' }),
  })
  if (started.status !== 201) throw new Error(`start: HTTP ${started.status}`)
  const { runId } = (await started.json()) as { runId: string }
  await settled()
  return runId
}

test.group('The package pages in an AdonisJS web app (Chromium)', () => {
  test('useChat: sign in, a turn, its approval, the answer', async ({ assert }) => {
    const { url } = await serveWebKit({ runner: scriptedAgent({ steps: ['read', 'approval'] }) })
    const browser = await launchBrowser()
    const page = await browser.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    const chat = `/chat?chat=chat-${randomUUID()}`
    await signInAt(page, url, chat, 'alice@example.com')
    await page.locator('#status', { hasText: 'ready' }).waitFor()
    await page.fill('#message', 'Send the weekly report')
    await page.getByRole('button', { name: 'Send' }).click()
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    await page.getByRole('button', { name: 'Approve' }).click()
    const answer = page.locator('.assistant').last()
    await answer.locator('.text', { hasText: 'Sent.' }).waitFor()
    assert.include((await answer.locator('.text').allTextContents()).join(''), 'Revenue was 42.')
    assert.lengthOf(await answer.locator('.tool[data-state=output-available]').all(), 2)
    assert.isNull(
      await page
        .getByRole('alert')
        .textContent({ timeout: 100 })
        .catch(() => null)
    )
    assert.deepEqual(errors, [])
  }).timeout(90_000)

  test('useChat: a page whose token is gone shows the refusal, and nothing runs', async ({
    assert,
  }) => {
    const { url, app } = await serveWebKit({ runner: scriptedAgent({ steps: ['read'] }) })
    const browser = await launchBrowser()
    const context = await browser.newContext()
    const page = await context.newPage()
    const chat = `/chat?chat=chat-${randomUUID()}`
    await signInAt(page, url, chat, 'alice@example.com')
    await page.locator('#status', { hasText: 'ready' }).waitFor()
    // A page of another session (or one from before the session was renewed): its token is
    // not this session's, and the XSRF cookie is gone.
    await page.$eval('meta[name="csrf-token"]', (meta) => meta.setAttribute('content', 'stale'))
    await context.clearCookies({ name: 'XSRF-TOKEN' })
    await page.fill('#message', 'Send the weekly report')
    await page.getByRole('button', { name: 'Send' }).click()
    const alert = await page.getByRole('alert').textContent()
    assert.include(alert, 'invalid_csrf_token')
    const db = await app.container.make('lucid.db')
    assert.lengthOf(await db.from('agent_streams').select('run_id'), 0)
  }).timeout(90_000)

  test('admin: sign in, approve an item with shield on', async ({ assert }) => {
    const { url, agentStream } = await serveWebKit({
      runner: scriptedAgent({ steps: ['approval'] }),
    })
    const runId = await parkedRun(url, () => agentStream.driver.settled())
    const browser = await launchBrowser()
    const page = await browser.newPage()
    await signInAt(page, url, '/agent/admin', 'root@example.com')
    await page.locator('#list a.open').first().click()
    await page.locator('article.item').waitFor()
    // Shield's token in shield's field, the console's own in its own.
    assert.equal(await page.locator('#form-approve input[name=_csrf]').count(), 1)
    assert.equal(await page.locator('#form-approve input[name=agent_stream_csrf]').count(), 1)
    await page.getByRole('button', { name: /Approve/ }).click()
    await page.getByRole('status').filter({ hasText: 'Approved' }).waitFor()
    await agentStream.driver.settled()
    const [item] = await agentStream.parking.queries.list({ streamRunId: runId, status: 'decided' })
    assert.equal(item?.status, 'approved')
  }).timeout(90_000)

  test('admin: a form whose token is refused (shield or the console) shows it, deciding nothing', async ({
    assert,
  }) => {
    const { url, agentStream } = await serveWebKit({
      runner: scriptedAgent({ steps: ['approval'] }),
    })
    const runId = await parkedRun(url, () => agentStream.driver.settled())
    const browser = await launchBrowser()
    const page = await browser.newPage()
    await signInAt(page, url, '/agent/admin', 'root@example.com')
    await page.locator('#list a.open').first().click()
    await page.locator('article.item').waitFor()
    const itemUrl = page.url()
    for (const field of ['_csrf', 'agent_stream_csrf']) {
      await page.goto(itemUrl)
      await page.$$eval(`input[name="${field}"]`, (inputs) =>
        inputs.forEach((input) => input.setAttribute('value', 'stale'))
      )
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.getByRole('button', { name: /Approve/ }).click(),
      ])
      assert.equal(response.status(), 403, field)
      await page.getByRole('alert').filter({ hasText: 'nothing was decided' }).waitFor()
      assert.equal(await page.locator('h1').textContent(), 'Nothing was decided')
      // Its way back is the item, whose next load carries fresh tokens.
      await page.locator('#back-to-item').click()
      await page.locator('article.item').waitFor()
    }
    const [item] = await agentStream.parking.queries.list({ streamRunId: runId })
    assert.equal(item.status, 'pending')
  }).timeout(90_000)

  test('admin: signed out under an open queue, its live part says so (401, no redirect)', async ({
    assert,
  }) => {
    const { url, agentStream } = await serveWebKit({
      runner: scriptedAgent({ steps: ['approval'] }),
    })
    await parkedRun(url, () => agentStream.driver.settled())
    const browser = await launchBrowser()
    const page = await browser.newPage()
    // The console's event stream answers (its headers come once it listens to the queue).
    const live = page.waitForResponse((r) => new URL(r.url()).pathname === '/agent/admin/events')
    await signInAt(page, url, '/agent/admin', 'root@example.com')
    assert.equal((await live).status(), 200)
    const out = await page.evaluate(`fetch('/logout', {
      method: 'POST',
      headers: { 'x-xsrf-token': document.cookie.split('; ').find((c) => c.startsWith('XSRF-TOKEN=')).slice(11) },
    }).then((r) => r.status)`)
    assert.equal(out, 204)
    // The queue changes: the page fetches its live part, refused now; or its event stream,
    // if it reconnects first, is. (A fetch sent before the sign-out may still answer 200: the
    // first answer that is not is the one.)
    const liveParts = ['/agent/admin/items', '/agent/admin/events']
    const refused = page.waitForResponse(
      (r) => liveParts.includes(new URL(r.url()).pathname) && r.status() !== 200
    )
    await parkedRun(url, () => agentStream.driver.settled())
    assert.equal((await refused).status(), 401)
    assert.isNull((await refused).headers()['location'] ?? null)
    await page.locator('#live', { hasText: 'Live updates stopped' }).waitFor()
  })
    .skip(
      process.env.DB === 'pg' || process.env.DB === 'mysql',
      'on PostgreSQL and MariaDB the queue event after the sign-out sometimes never reaches the page within 30 s (open); the 401s themselves are checked headless in web_kit.spec.ts'
    )
    .timeout(90_000)
})
