import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { test } from '@japa/runner'
import type { Page } from 'playwright-core'
import type { AgentRunner } from '../src/runner/contract.js'
import { tableNames } from '../src/store/schema.js'
import { launchBrowser } from './helpers/browser.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'

const HEADERS = { 'x-admin': 'yes', 'x-user': 'alice' }
const HOSTILE = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`
const BIDI = '\u202E\u2067\u200F'
const LONG = 'L'.repeat(20_000)

/** Parks on `message` approvals (a number) over five tools and two approvers; echoes the inputs it ran with. */
const manyAgent: AgentRunner = {
  async start(ctx) {
    const count = Number((ctx.input as { message: string }).message)
    for (let i = 0; i < count; i++) {
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id: `call_${i}`,
        toolName: `tool_${i % 5}`,
        approver: i % 3 === 0 ? 'ops' : 'requester',
        input: { i },
      })
    }
    return { status: 'parked', checkpoint: {} }
  },
  async resume(ctx) {
    for (const item of ctx.items) {
      await ctx.writer.write({ t: 'text', v: `${item.status}:${JSON.stringify(item.input)};` })
    }
    return { status: 'finished' }
  },
}

/** Says something, calls a tool, then asks to send an email; writes what the tool received. */
const emailAgent: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({ t: 'text', v: 'Let me look up the numbers. ' })
    await ctx.writer.write({
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: 'search_1',
        name: 'search',
        input: { q: 'weekly' },
        toolKind: 'read',
      },
    })
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'tool-output', id: 'search_1', output: { revenue: 42 } },
    })
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'send_1',
      toolName: 'send_email',
      input: { to: 'team@example.com', subject: 'Weekly' },
      confirmation: { title: 'Send the weekly report?', description: 'Emails the team.' },
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume(ctx) {
    const [item] = ctx.items
    await ctx.writer.write({ t: 'text', v: `${item.status} with ${JSON.stringify(item.input)}` })
    return { status: 'finished' }
  },
}

/** Hostile values in every field a person sees: conversation, tool, ids, approver, copy, input, questions. */
const hostileAgent: AgentRunner = {
  async start(ctx) {
    const evil = `${HOSTILE}${BIDI}`
    await ctx.writer.write({ t: 'text', v: `${evil} ${LONG}` })
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'subagent-start', runId: `${ctx.runId}.child`, name: evil },
    })
    await ctx.writer.write({
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: 'tc',
        name: evil,
        input: { html: evil, long: LONG },
        toolKind: 'read',
      },
    })
    await ctx.writer.write({ t: 'event', event: { kind: 'tool-output', id: 'tc', output: evil } })
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'subagent-finish', runId: `${ctx.runId}.child` },
    })
    for (const [id, approver] of [
      [`a<b>1</b>${BIDI}`, 'requester'],
      [`b<i>2</i>${BIDI}`, `<i>ops</i>${BIDI}`],
    ]) {
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id,
        toolName: `${HOSTILE.slice(0, 60)}${BIDI}`,
        approver,
        input: { body: evil, long: LONG },
        confirmation: { title: evil, description: `${evil}${LONG}` },
      })
    }
    await ctx.writer.write({
      t: 'elicitation',
      runId: ctx.runId,
      id: `q<u>1</u>${BIDI}`,
      request: {
        id: `q<u>1</u>${BIDI}`,
        source: 'ask',
        preamble: evil,
        questions: [
          {
            id: `x"]${BIDI}`,
            prompt: `${evil}${LONG}`,
            options: [{ value: evil, label: evil }],
            allowFreeText: true,
          },
        ],
      },
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume() {
    return { status: 'finished' }
  },
}

async function setup(runner: AgentRunner) {
  const served = await serveApp({ runner })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const start = async (message = 'go', threadId?: string) => {
    const response = await postJson(`${served.url}/runs`, { message, threadId })
    const { runId } = (await response.json()) as { runId: string }
    await served.agentStream.driver.settled()
    return runId
  }
  const snapshot = async () => {
    const out: Record<string, unknown[]> = {}
    for (const table of Object.values(tableNames())) {
      out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
    }
    return JSON.stringify(out)
  }
  const text = async (runId: string) => {
    const out: string[] = []
    for await (const frame of served.agentStream.sink.replay(runId)) {
      if (frame.t === 'text') out.push(frame.v)
    }
    return out.join('')
  }
  return { ...served, start, snapshot, text }
}

async function newPage() {
  const context = await (await launchBrowser()).newContext({ extraHTTPHeaders: HEADERS })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  return { page, errors }
}

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's serious and critical violations on the page (injected through the debugger, not a script tag: the CSP stays on). */
async function seriousViolations(page: Page) {
  await page.evaluate(await axeSource)
  return page.evaluate(async () => {
    const result = await (globalThis as any).axe.run((globalThis as any).document, {
      resultTypes: ['violations'],
    })
    return result.violations
      .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
  })
}

/** Every row key of a list, following its `Next page` links from `path` (plain HTTP, as a browser would). */
async function allRows(url: string, path: string) {
  const keys: string[] = []
  let next: string | null = path
  let pages = 0
  while (next) {
    const html = await (await fetch(new URL(next, url), { headers: HEADERS })).text()
    keys.push(...[...html.matchAll(/<tr data-key="([^"]*)"/g)].map((m) => m[1]))
    next = /<a href="([^"]*)" rel="next">/.exec(html)?.[1]?.replaceAll('&amp;', '&') ?? null
    pages++
  }
  return { keys, pages, html: '' }
}

test.group('Admin console in Chromium', () => {
  test('500 parked items: every one reachable through paging and through each filter', async ({
    assert,
  }) => {
    const { url, start } = await setup(manyAgent)
    await start('250', 'thread-a')
    await start('250', 'thread-b')
    const newest = await allRows(url, '/admin')
    assert.equal(newest.keys.length, 500)
    assert.equal(new Set(newest.keys).size, 500)
    assert.equal(newest.pages, 10)
    const oldest = await allRows(url, '/admin?order=oldest')
    assert.deepEqual(oldest.keys, [...newest.keys].reverse())
    // Each filter's values partition the queue, and each count says how many its pages hold.
    const first = await (await fetch(`${url}/admin`, { headers: HEADERS })).text()
    const count = (name: string, value: string) => {
      const select = new RegExp(`<select name="${name}">(.*?)</select>`, 's').exec(first)![1]
      const option = new RegExp(`<option value="${value}"[^>]*>[^<]* \\((\\d+)\\)</option>`).exec(
        select
      )
      return Number(option![1])
    }
    let total = 0
    for (let tool = 0; tool < 5; tool++) {
      const { keys } = await allRows(url, `/admin?tool=tool_${tool}`)
      assert.equal(keys.length, 100)
      assert.equal(count('tool', `tool_${tool}`), 100)
      total += keys.length
    }
    assert.equal(total, 500)
    const ops = await allRows(url, '/admin?approver=ops')
    const requester = await allRows(url, '/admin?approver=requester')
    assert.equal(ops.keys.length, 168)
    assert.equal(count('approver', 'ops'), 168)
    assert.equal(ops.keys.length + requester.keys.length, 500)
    assert.equal((await allRows(url, '/admin?thread=thread-a')).keys.length, 250)
    assert.equal((await allRows(url, '/admin?thread=thread-b&tool=tool_0')).keys.length, 50)
    assert.equal((await allRows(url, '/admin?age=lt1h')).keys.length, 500)
    assert.equal((await allRows(url, '/admin?age=gt1d')).keys.length, 0)
    // A forged page key or a bad filter is refused by its rule, never echoed.
    const forged = await fetch(`${url}/admin?after=bm90LWEta2V5`, { headers: HEADERS })
    assert.equal(forged.status, 400)
    assert.include(await forged.text(), '&quot;after&quot; fails the &quot;pageKey&quot; rule')
    const bad = await fetch(`${url}/admin?age=<b>`, { headers: HEADERS })
    assert.equal(bad.status, 400)
    assert.notInclude(await bad.text(), '<b>')
    // The browser walks the pages too.
    const { page, errors } = await newPage()
    await page.goto(`${url}/admin?tool=tool_1`)
    const seen = new Set<string>()
    for (;;) {
      for (const key of await page
        .locator('#list tbody tr')
        .evaluateAll((rows) => rows.map((row: any) => row.getAttribute('data-key'))))
        seen.add(key)
      const next = page.locator('a[rel=next]')
      if ((await next.count()) === 0) break
      await next.click()
      await page.waitForLoadState()
    }
    assert.equal(seen.size, 100)
    assert.deepEqual(errors, [])
  }).timeout(300_000)

  test('a live item arrives while a form is half filled: the typed text and focus survive', async ({
    assert,
  }) => {
    const { url, start } = await setup(emailAgent)
    await start()
    const { page, errors } = await newPage()
    // The item view: the queue beside it updates, the decision form is untouched.
    await page.goto(`${url}/admin`)
    await page.locator('#list a.open').first().click()
    await page.locator('#edit-input').waitFor()
    await page.locator('#approve-reason').fill('half typed')
    await page.locator('#edit-input').focus()
    await page.keyboard.press('End')
    await page.keyboard.type(' // still typing')
    const typed = await page.locator('#edit-input').inputValue()
    await start()
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('#list li').length === 2
    )
    assert.equal(await page.locator('#approve-reason').inputValue(), 'half typed')
    assert.equal(await page.locator('#edit-input').inputValue(), typed)
    assert.equal(
      await page.evaluate(() => (globalThis as any).document.activeElement.id),
      'edit-input'
    )
    // The queue: a filter being typed keeps its text and focus while a row arrives.
    await page.goto(`${url}/admin`)
    await page.locator('input[name=thread]').fill('half a thr')
    await start()
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('#list tbody tr').length === 3
    )
    assert.equal(await page.locator('input[name=thread]').inputValue(), 'half a thr')
    assert.equal(
      await page.evaluate(() => (globalThis as any).document.activeElement.name),
      'thread'
    )
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('edit-then-approve: the edited input is what the tool receives and what the history shows', async ({
    assert,
  }) => {
    const { url, start, text, snapshot, agentStream } = await setup(emailAgent)
    const runId = await start()
    const { page, errors } = await newPage()
    await page.goto(`${url}/admin`)
    await page.locator('#list a.open').first().click()
    // The conversation up to the ask, through the public projection.
    const conversation = await page.locator('.conversation').innerText()
    assert.include(conversation, 'Let me look up the numbers.')
    assert.include(conversation, 'search')
    assert.include(conversation, '"revenue": 42')
    assert.include(await page.locator('.copy').innerText(), 'Send the weekly report?')
    // Not JSON: refused, nothing changes.
    const before = await snapshot()
    await page.locator('#edit-input').fill('{ "to": ')
    await page.locator('#form-approve button').click()
    await page.locator('.notice').waitFor()
    assert.include(await page.locator('.notice').innerText(), 'not valid JSON')
    assert.equal(await snapshot(), before)
    await page.locator('#edit-input').fill('{ "to": "ops@example.com", "subject": "Weekly" }')
    await page.locator('#approve-reason').fill('only ops')
    await page.locator('#form-approve button').click()
    await page.locator('.notice').waitFor()
    assert.equal(await page.locator('.notice').innerText(), 'Approved: the run continues.')
    await agentStream.driver.settled()
    const served = await text(runId)
    assert.include(served, 'approved with {"to":"ops@example.com","subject":"Weekly"}')
    await page.goto(`${url}/admin/history?reason=ONLY`)
    const row = await page.locator('#list tbody tr').first().innerText()
    assert.include(row, 'edited input')
    assert.include(row, 'only ops')
    await page.locator('#list a.open').first().click()
    assert.include(await page.locator('.decided').innerText(), 'approved')
    assert.include(await page.locator('article.item').innerText(), 'ops@example.com')
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('keyboard only: j, Enter, a approves; the run continues', async ({ assert }) => {
    const { url, start, text, agentStream } = await setup(emailAgent)
    const runId = await start()
    const { page, errors } = await newPage()
    await page.goto(`${url}/admin`)
    await page.keyboard.press('j')
    await page.keyboard.press('Enter')
    await page.locator('article.item').waitFor()
    await page.keyboard.press('a')
    await page.locator('.notice').waitFor()
    assert.equal(await page.locator('.notice').innerText(), 'Approved: the run continues.')
    await agentStream.driver.settled()
    assert.include(await text(runId), 'approved with {"to":"team@example.com","subject":"Weekly"}')
    // History filters by how it was decided.
    assert.lengthOf((await allRows(url, '/admin/history?via=admin')).keys, 1)
    assert.lengthOf((await allRows(url, '/admin/history?via=api')).keys, 0)
    assert.lengthOf((await allRows(url, '/admin/history?by=alice')).keys, 1)
    assert.lengthOf((await allRows(url, '/admin/history?status=approved')).keys, 1)
    assert.lengthOf((await allRows(url, '/admin/history?status=rejected')).keys, 0)
    // The queue's status filter: any status but pending is the history's view.
    const moved = await fetch(`${url}/admin?status=approved`, {
      headers: HEADERS,
      redirect: 'manual',
    })
    assert.equal(moved.status, 302)
    assert.equal(moved.headers.get('location'), '/admin/history?status=approved')
    assert.deepEqual(errors, [])
  }).timeout(120_000)

  test('hostile values in every field: shown as text, isolated, nothing runs; axe finds nothing serious', async ({
    assert,
  }) => {
    const { url, start, agentStream } = await setup(hostileAgent)
    const runId = await start()
    const items = await agentStream.parking.queries.pendingOf(runId)
    assert.lengthOf(items, 3)
    // Decided through the API with a hostile reason, so the history holds one too.
    const rejected = await fetch(
      `${url}/items/${encodeURIComponent(runId)}/${encodeURIComponent(items[0].itemId)}/reject`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body: JSON.stringify({ reason: `${HOSTILE}${BIDI}${LONG.slice(0, 1900)}` }),
      }
    )
    assert.equal(rejected.status, 200)
    const { page, errors } = await newPage()
    const itemPath = (item: (typeof items)[number]) =>
      `/admin/items/${encodeURIComponent(item.runId)}/${encodeURIComponent(item.itemId)}?park=${item.park}`
    for (const path of [
      '/admin',
      '/admin/history',
      itemPath(items[0]),
      itemPath(items[1]),
      itemPath(items[2]),
    ]) {
      await page.goto(`${url}${path}`)
      await page.waitForTimeout(300)
      assert.equal(await page.locator('main script, main img').count(), 0, path)
      const shown = await page.locator('main').innerText()
      assert.notMatch(shown, /[\u202A-\u202E\u2066-\u2069\u200E\u200F]/, path)
      assert.include(shown, '[U+202E]', path)
      assert.include(shown, '<script>', path)
      if ((await page.locator('#edit-input').count()) > 0) {
        // The editor shows bidi controls as JSON escapes (the same JSON), never acting.
        const editable = await page.locator('#edit-input').inputValue()
        assert.include(editable, '\\u202e')
        assert.notMatch(editable, /[\u202A-\u202E\u2066-\u2069\u200E\u200F]/)
      }
      assert.deepEqual(await seriousViolations(page), [], path)
    }
    assert.isUndefined(await page.evaluate(() => (globalThis as any).pwned))
    assert.deepEqual(errors, [])
  }).timeout(180_000)

  test('axe: the queue, an approval and the history have no serious violations', async ({
    assert,
  }) => {
    const { url, start } = await setup(emailAgent)
    await start()
    const { page } = await newPage()
    for (const path of ['/admin', '/admin/history']) {
      await page.goto(`${url}${path}`)
      assert.deepEqual(await seriousViolations(page), [], path)
    }
    await page.goto(`${url}/admin`)
    await page.locator('#list a.open').first().click()
    await page.locator('article.item').waitFor()
    assert.deepEqual(await seriousViolations(page), [], 'item')
    if (process.env.SCREENSHOTS) {
      await page.setViewportSize({ width: 1280, height: 900 })
      await page.screenshot({ path: `${process.env.SCREENSHOTS}/admin-item.png`, fullPage: true })
    }
  }).timeout(120_000)
})
