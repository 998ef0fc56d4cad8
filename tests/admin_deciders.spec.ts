import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { test } from '@japa/runner'
import type { Page } from 'playwright-core'
import type { AgentStreamConfig } from '../src/define_config.js'
import { defaultApproverPolicy } from '../index.js'
import { DecisionLapsedError } from '../src/errors.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { tableNames } from '../src/store/schema.js'
import { launchBrowser } from './helpers/browser.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'

/**
 * Who decides, as the admin console shows it: decision forms and their keys only for someone
 * the approver policy lets decide (anyone else reads why not), a refusal as an alert in its own
 * style, the key hints' contrast, the header cells of the decisions table, display names.
 */

async function setup(config: AgentStreamConfig = {}) {
  const served = await serveApp({ runner: scriptedAgent({ steps: ['approval'] }), ...config })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const start = async (user = 'alice') => {
    const response = await postJson(`${served.url}/runs`, { message: 'go' }, user)
    const { runId } = (await response.json()) as { runId: string }
    await served.agentStream.driver.settled()
    const [item] = await served.agentStream.parking.queries.pendingOf(runId)
    return { runId, item, path: `/admin/items/${item.runId}/${item.itemId}?park=${item.park}` }
  }
  const snapshot = async () => {
    const out: Record<string, unknown[]> = {}
    for (const table of Object.values(tableNames())) {
      out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
    }
    return JSON.stringify(out)
  }
  return { ...served, start, snapshot }
}

/** A page of an admin (`x-admin: yes`) acting as `user` (with `roles`). */
async function adminPage(user: string, roles?: string) {
  const headers: Record<string, string> = { 'x-admin': 'yes', 'x-user': user }
  if (roles) headers['x-roles'] = roles
  const context = await (await launchBrowser()).newContext({ extraHTTPHeaders: headers })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  return { page, errors }
}

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's color-contrast rule on the page: its violations and what it could not decide. */
async function contrast(page: Page) {
  await page.evaluate(await axeSource)
  return page.evaluate(async () => {
    const result = await (globalThis as any).axe.run((globalThis as any).document, {
      runOnly: { type: 'rule', values: ['color-contrast'] },
      resultTypes: ['violations', 'incomplete'],
    })
    const nodes = (list: any[]) =>
      list.flatMap((rule: any) => rule.nodes.map((n: any) => n.target.join(' ')))
    return { violations: nodes(result.violations), incomplete: nodes(result.incomplete) }
  })
}

test.group('Admin console: who decides', () => {
  test('a non-decider sees no decision form, no keys, and why; the a key decides nothing', async ({
    assert,
  }) => {
    const { url, start, snapshot } = await setup()
    const { path } = await start('alice')
    const { page, errors } = await adminPage('bob', 'support')
    await page.goto(`${url}${path}`)
    const decision = page.locator('.decision')
    assert.equal(await page.locator('form.decide').count(), 0)
    assert.equal(await decision.locator('button, kbd, textarea').count(), 0)
    const why = await page.locator('#cannot-decide').innerText()
    assert.include(why, 'You may not decide this item.')
    assert.include(why, 'Only the person the run is for (alice) may decide it')
    assert.include(why, 'You are bob, with the roles support.')
    assert.include(why, 'approverPolicy')
    // The keys act on nothing: no request, nothing changes.
    const before = await snapshot()
    const posts: string[] = []
    page.on('request', (request) => {
      if (request.method() === 'POST') posts.push(request.url())
    })
    for (const key of ['a', 'r', 'e']) await page.keyboard.press(key)
    assert.deepEqual(posts, [])
    assert.equal(await snapshot(), before)
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('a decider sees the forms and approves; a composed policy lets an admin role decide', async ({
    assert,
  }) => {
    const { url, start, agentStream } = await setup({
      approverPolicy: (principal, item) =>
        defaultApproverPolicy(principal, item) || (principal?.roles?.includes('admin') ?? false),
    })
    const { path, item } = await start('alice')
    // Without the role: the policy's refusal, in the policy's words.
    const plain = await adminPage('bob')
    await plain.page.goto(`${url}${path}`)
    assert.include(
      await plain.page.locator('#cannot-decide').innerText(),
      'The approver policy (config approverPolicy) does not let you decide it. You are bob, with no role.'
    )
    const { page, errors } = await adminPage('bob', 'admin')
    await page.goto(`${url}${path}`)
    assert.equal(await page.locator('#cannot-decide').count(), 0)
    assert.include(await page.locator('#form-approve button').innerText(), 'Approve')
    await page.keyboard.press('a')
    await page.locator('.notice').waitFor()
    const notice = page.locator('.notice')
    assert.equal(await notice.innerText(), 'Approved: the run continues.')
    assert.equal(await notice.getAttribute('role'), 'status')
    await agentStream.driver.settled()
    const [decided] = await agentStream.parking.queries.list({
      status: 'decided',
      runId: item.runId,
    })
    assert.equal(decided.decidedBy, 'bob')
    assert.equal(decided.decidedVia, 'admin')
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('a refusal renders as an alert in its own style, never as a success', async ({ assert }) => {
    // The policy changes its mind between the page and the click (a role taken away).
    let allowed = true
    const { url, start, snapshot } = await setup({ approverPolicy: () => allowed })
    const { path, item } = await start('alice')
    const { page, errors } = await adminPage('bob')
    await page.goto(`${url}${path}`)
    allowed = false
    const before = await snapshot()
    await page.locator('#form-approve button').click()
    const notice = page.locator('.notice')
    await notice.waitFor()
    assert.equal(await notice.getAttribute('role'), 'alert')
    assert.equal(
      await notice.innerText(),
      'Refused. You may not decide this item: nothing was decided.'
    )
    // Back on the item, which now says why it shows no form.
    assert.include(page.url(), `/admin/items/${item.runId}/${item.itemId}`)
    assert.equal(await page.locator('#form-approve').count(), 0)
    assert.equal(await snapshot(), before)
    const refusedLook = await notice.evaluate((element) => {
      const style = (globalThis as any).getComputedStyle(element)
      return `${style.backgroundColor} ${style.borderLeftWidth}`
    })
    // Decided elsewhere first: the conflict is an alert too; a success is a status, unlike it.
    allowed = true
    await page.goto(`${url}${path}`)
    await postJson(`${url}/items/${item.runId}/${item.itemId}/reject`, {}, 'alice')
    await page.locator('#form-approve button').click()
    await notice.waitFor()
    assert.equal(await notice.getAttribute('role'), 'alert')
    assert.include(await notice.innerText(), 'Someone decided this item first.')
    const other = await start('alice')
    await page.goto(`${url}${other.path}`)
    await page.locator('#form-approve button').click()
    await page.locator('.notice[role=status]').waitFor()
    const successLook = await notice.evaluate((element) => {
      const style = (globalThis as any).getComputedStyle(element)
      return `${style.backgroundColor} ${style.borderLeftWidth}`
    })
    assert.notEqual(successLook, refusedLook)
    assert.equal(await page.locator('[role=alert]').count(), 0)
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('an item past its expiry shows no form: nobody may decide it now', async ({ assert }) => {
    const served = await serveApp({
      runner: scriptedAgent({ steps: ['approval'], expiresInMs: 1 }),
      sweepInterval: '1h',
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const response = await postJson(`${served.url}/runs`, { message: 'go' })
    const { runId } = (await response.json()) as { runId: string }
    await served.agentStream.driver.settled()
    const [item] = await served.agentStream.parking.queries.pendingOf(runId)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const { page } = await adminPage('alice')
    await page.goto(`${served.url}/admin/items/${item.runId}/${item.itemId}?park=${item.park}`)
    assert.equal(await page.locator('form.decide').count(), 0)
    assert.include(await page.locator('#cannot-decide').innerText(), 'Its time ran out')
    // The same rule the service decides by (`lapsed`): a decision now is refused, still pending.
    await assert.rejects(
      () =>
        served.agentStream.parking.decisions.approve(item.runId, item.itemId, {
          principal: { id: 'alice' },
          via: 'admin',
        }),
      DecisionLapsedError
    )
    assert.lengthOf(await served.agentStream.parking.queries.pendingOf(runId), 1)
  }).timeout(120_000)

  test('the key hints on the buttons meet AA contrast (axe color-contrast)', async ({ assert }) => {
    const { url, start } = await setup()
    const { path } = await start('alice')
    const { page } = await adminPage('alice')
    await page.goto(`${url}${path}`)
    const result = await contrast(page)
    assert.deepEqual(result.violations, [])
    assert.notInclude(result.incomplete.join(' '), 'kbd')
    const kbd = page.locator('#form-approve button kbd')
    const colors = await kbd.evaluate((element) => {
      const style = (globalThis as any).getComputedStyle(element)
      return { color: style.color, background: style.backgroundColor }
    })
    assert.notEqual(colors.color, colors.background)
  }).timeout(120_000)

  test('the decisions table of a run: each header fits its cell (Decided by, Via apart)', async ({
    assert,
  }) => {
    const { url, start } = await setup()
    const { runId, item } = await start('alice')
    await postJson(`${url}/items/${item.runId}/${item.itemId}/approve`, {}, 'alice')
    const { page } = await adminPage('alice')
    for (const width of [1280, 900]) {
      await page.setViewportSize({ width, height: 900 })
      await page.goto(`${url}/admin/runs/${runId}`)
      const overflowing = await page
        .locator('table.decisions th')
        .evaluateAll((cells) =>
          cells
            .filter((cell: any) => cell.scrollWidth > cell.clientWidth)
            .map((cell: any) => cell.textContent)
        )
      assert.deepEqual(overflowing, [], `${width}px`)
    }
  }).timeout(120_000)

  test('display names: on every view that shows a principal, as text, asked once per id per request', async ({
    assert,
  }) => {
    const asked: string[] = []
    const names: Record<string, string> = { alice: '<b>Alice</b> \u202ELiddell', bob: 'Bob' }
    const { url, start, agentStream } = await setup({
      displayName: async (id) => {
        asked.push(id)
        if (id === 'mallory') throw new Error('no such user')
        return names[id] ?? ''
      },
    })
    const first = await start('alice')
    const second = await start('alice')
    const third = await start('carol')
    await postJson(`${url}/items/${first.item.runId}/${first.item.itemId}/approve`, {}, 'alice')
    await postJson(`${url}/items/${second.item.runId}/${second.item.itemId}/reject`, {}, 'alice')
    await agentStream.driver.settled()
    const { page, errors } = await adminPage('mallory')
    const shownAs = '<b>Alice</b> [U+202E]Liddell'
    for (const path of ['/admin/history', first.path, `/admin/runs/${first.runId}`]) {
      // One request (the page's own, before its script asks for more) asks for alice once,
      // however often the view shows her.
      asked.length = 0
      const html = await (
        await fetch(`${url}${path}`, { headers: { 'x-admin': 'yes', 'x-user': 'mallory' } })
      ).text()
      assert.isAbove(html.split('&lt;b&gt;Alice&lt;/b&gt;').length, 2, path)
      assert.deepEqual(
        asked.filter((id) => id === 'alice'),
        ['alice'],
        path
      )
      await page.goto(`${url}${path}`)
      const main = page.locator('main')
      assert.include(await main.innerText(), shownAs, path)
      assert.equal(await main.locator('b').count(), 0, path)
      assert.notMatch(await main.innerText(), /\u202E/, path)
    }
    // Beside the name, the id (the filters take ids); a hook that throws or gives nothing shows the id.
    await page.goto(`${url}/admin/history`)
    assert.include(await page.locator('#list tbody tr').first().innerText(), 'alice')
    await page.goto(`${url}${third.path}`)
    assert.include(await page.locator('dl.meta').innerText(), 'requester (carol)')
    assert.include(await page.locator('#cannot-decide').innerText(), 'You are mallory')
    assert.deepEqual(errors, [])
  }).timeout(180_000)
})
