import { readFileSync } from 'node:fs'
import { test } from '@japa/runner'
import type { Page } from 'playwright-core'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { launchBrowser } from './helpers/browser.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'
import { sleep } from './helpers/sink.js'

const ADMIN = { 'x-admin': 'yes', 'x-user': 'alice' }
const HTML = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`
const BIDI = 'evil \u202Egnp.exe\u202C'
const LONG = 'x'.repeat(3000)
/** A long reason (the reason rule caps it at 2000 characters). */
const LONG_REASON = 'y'.repeat(1900)
const AXE = readFileSync(new URL('../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8')

const message = (ctx: RunContext) => (ctx.input as { message?: string } | null)?.message ?? ''

/**
 * One runner, its script chosen by the start message:
 * - `delegate`: a sub-agent `researcher` asks approval for `search_web`, then (resumed) for
 *   `send_email`, then finishes; the parent closes the run;
 * - `fail`: throws (the run fails);
 * - `park`: asks approval for `deploy` and waits (to be cancelled);
 * - `hostile`: a sub-agent with markup, bidi and a long value in its name, a tool named so,
 *   an approval of it;
 * - anything else: a line of text.
 */
const runner: AgentRunner = {
  async start(ctx) {
    const script = message(ctx)
    if (script === 'fail') {
      await ctx.writer.write({ t: 'text', v: 'About to break. ' })
      throw new Error('secret failure text')
    }
    if (script === 'talk') {
      await ctx.writer.write({ t: 'text', v: 'Talking until stopped. ' })
      await ctx.writer.flush?.()
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))
      return { status: 'finished' }
    }
    if (script === 'park') {
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id: 'deploy-1',
        toolName: 'deploy',
        input: { env: 'prod' },
      })
      return { status: 'parked', checkpoint: { step: 'deploy' } }
    }
    if (script === 'hostile') {
      const child = ctx.child(`${ctx.runId}.sub`, { name: `${HTML}${BIDI}${LONG}` })
      await child.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'h-1',
          name: `${HTML}${BIDI}`,
          input: { body: HTML, note: BIDI },
          toolKind: 'action',
        },
      })
      await child.writer.write({
        t: 'approval',
        runId: child.runId,
        id: 'h-1',
        // The longest a tool name may be (it keys an approvals column of 191 characters).
        toolName: `${HTML}${BIDI}`.padEnd(191, 'z'),
        input: { body: HTML },
      })
      return { status: 'parked', checkpoint: { step: 'hostile' } }
    }
    if (script === 'delegate') {
      await ctx.writer.write({ t: 'text', v: 'Delegating to a researcher. ' })
      const child = ctx.child(`${ctx.runId}.researcher`, { name: 'researcher' })
      await child.writer.write({ t: 'text', v: 'Searching first. ' })
      await child.writer.write({
        t: 'approval',
        runId: child.runId,
        id: 'call-1',
        toolName: 'search_web',
        input: { q: 'weekly numbers' },
      })
      return { status: 'parked', checkpoint: { step: 1 } }
    }
    await ctx.writer.write({ t: 'text', v: 'Hello.' })
    return { status: 'finished' }
  },
  async resume(ctx) {
    const step = (ctx.checkpoint as { step: unknown }).step
    if (step === 1) {
      await ctx.writer.write({
        t: 'event',
        event: { kind: 'tool-output', id: 'call-1', output: { revenue: 42 } },
      })
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id: 'call-2',
        toolName: 'send_email',
        input: { to: 'team@example.com' },
      })
      return { status: 'parked', checkpoint: { step: 2 } }
    }
    if (step === 2) {
      await ctx.writer.write({ t: 'text', v: 'Sent the report. ' })
      await ctx.finish()
      await ctx.writer.write({ t: 'text', v: 'All done.' })
    }
    return { status: 'finished' }
  },
}

async function setup() {
  const served = await serveApp({ runner })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const start = async (body: Record<string, unknown>) => {
    const response = await postJson(`${served.url}/runs`, body)
    const { runId } = (await response.json()) as { runId: string }
    await served.agentStream.driver.settled()
    return runId
  }
  const decider = (via: string) => ({ principal: { id: 'alice' }, via })
  return { ...served, db, start, decider }
}

/** The delegating run, parked twice by its sub-agent, each decided after a short wait. */
async function delegatedRun(served: Awaited<ReturnType<typeof setup>>) {
  const { start, agentStream, decider } = served
  const runId = await start({ message: 'delegate', threadId: 'thread-delegate' })
  const child = `${runId}.researcher`
  await sleep(250)
  await agentStream.parking.decisions.approve(child, 'call-1', decider('admin'), { reason: 'fine' })
  await agentStream.driver.settled()
  await sleep(400)
  await agentStream.parking.decisions.approve(child, 'call-2', decider('api'), {})
  await agentStream.driver.settled()
  return { runId, child }
}

/** Axe-core's serious and critical violations on the page (its CSP bypassed for the engine). */
async function seriousViolations(page: Page) {
  await page.evaluate(AXE)
  const result: any = await page.evaluate(() => (globalThis as any).axe.run())
  return result.violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
}

test.group('Admin runs in Chromium', () => {
  test('the timeline of a run whose sub-agent parked twice: lanes, two parks, who decided, waits', async ({
    assert,
  }) => {
    const served = await setup()
    const { runId, child } = await delegatedRun(served)
    const context = await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    page.on('console', (entry) => {
      if (entry.type() === 'error') errors.push(entry.text())
    })
    await page.goto(`${served.url}/admin/runs/${runId}`)
    const svg = page.locator('svg.timeline')
    await svg.waitFor()
    if (process.env.SCREENSHOT_TIMELINE) {
      await page.setViewportSize({ width: 1040, height: 800 })
      await page.locator('.figure').screenshot({ path: process.env.SCREENSHOT_TIMELINE })
    }
    if (process.env.SCREENSHOT_RUN) {
      await page.screenshot({ path: process.env.SCREENSHOT_RUN, fullPage: true })
    }
    assert.equal(await page.locator('dd .status').innerText(), 'finished')
    // Two lanes: the run and its sub-agent.
    assert.equal(await svg.locator('g.lane').count(), 2)
    assert.equal(await svg.locator('g.lane.subagent').getAttribute('data-run'), child)
    assert.include(await svg.locator('g.lane.subagent .name').textContent(), 'researcher')
    // Three segments (start, first resume, second resume), two sub-agent spans at least.
    assert.equal(await svg.locator('g.lane.main rect.segment').count(), 3)
    assert.isAtLeast(await svg.locator('g.lane.subagent rect.scope').count(), 2)
    // Both parks sit on the sub-agent's lane, each with who decided, how, and the wait.
    const parks = svg.locator('g.lane.subagent g.park')
    assert.equal(await parks.count(), 2)
    const first = (await parks.nth(0).locator('title').textContent())!
    const second = (await parks.nth(1).locator('title').textContent())!
    assert.match(first, /approve search_web: approved by alice via admin after \d/)
    assert.include(first, '(reason: fine)')
    assert.match(second, /approve send_email: approved by alice via api after \d/)
    assert.equal(await svg.locator('path.decision').count(), 3, 'two decisions and the legend')
    assert.equal(await svg.locator('g.lane g.failure').count(), 0)
    // The same, in words: the decisions table.
    const rows = page.locator('table.decisions tbody tr')
    assert.equal(await rows.count(), 2)
    const cells = await rows.nth(0).locator('td').allInnerTexts()
    assert.deepEqual(cells.slice(0, 7), [
      'approve search_web',
      child,
      '1',
      cells[3],
      'approved',
      'alice',
      'admin',
    ])
    // The wait is what the rows say: at least the 250 ms the test waited.
    const [asked] = await served.agentStream.parking.queries.list({
      runId: child,
      status: 'decided',
      perPage: 10,
    })
    assert.isAtLeast(
      Date.parse(asked.decidedAt!) - Date.parse(asked.createdAt),
      0,
      'decided after it was asked'
    )
    // The transcript, through the public projection, nests the sub-agent.
    const transcript = page.locator('.transcript')
    assert.include(await transcript.innerText(), 'Delegating to a researcher.')
    assert.include(await transcript.locator('section.sub').first().innerText(), 'Searching first.')
    assert.include(await transcript.innerText(), 'All done.')
    assert.deepEqual(await seriousViolations(page), [])
    assert.deepEqual(errors, [])
  }).timeout(180_000)

  test('a failed run is marked failed, in the list and on its timeline; its error text stays secret', async ({
    assert,
  }) => {
    const served = await setup()
    const runId = await served.start({ message: 'fail' })
    const page = await (
      await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    ).newPage()
    await page.goto(`${served.url}/admin/runs?status=failed`)
    assert.deepEqual(
      await page
        .locator('table.runs tbody tr')
        .evaluateAll((rows) => rows.map((row) => (row as any).dataset.run)),
      [runId]
    )
    assert.equal(await page.locator('table.runs .status').innerText(), 'failed')
    await page.locator('table.runs td:first-child a').click()
    await page.locator('svg.timeline').waitFor()
    assert.equal(await page.locator('dd .status').innerText(), 'failed')
    const failure = page.locator('svg.timeline g.lane.main g.failure')
    assert.equal(await failure.count(), 1)
    assert.include(await failure.locator('title').textContent(), 'failed: run_failed')
    assert.include(
      await page.locator('.transcript .failure').innerText(),
      'The run stopped unexpectedly.'
    )
    assert.notInclude(await page.content(), 'secret failure text')
    // Not listed under the other statuses.
    await page.goto(`${served.url}/admin/runs?status=finished`)
    assert.equal(await page.locator('table.runs').count(), 0)
  }).timeout(180_000)

  test('a cancelled run is listed under cancelled; each status filter lists its own runs', async ({
    assert,
  }) => {
    const served = await setup()
    const finished = await served.start({ message: 'hello' })
    const parked = await served.start({ message: 'park' })
    const cancelled = await served.start({ message: 'park' })
    const failed = await served.start({ message: 'fail' })
    const cancel = await postJson(`${served.url}/runs/${cancelled}/cancel`, {})
    assert.equal(cancel.status, 200)
    await served.agentStream.driver.settled()
    const page = await (
      await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    ).newPage()
    const listed = async (query: string) => {
      await page.goto(`${served.url}/admin/runs${query}`)
      return page
        .locator('table.runs tbody tr')
        .evaluateAll((rows) => rows.map((row) => (row as any).dataset.run as string))
    }
    assert.deepEqual(await listed('?status=cancelled'), [cancelled])
    assert.deepEqual(await listed('?status=parked'), [parked])
    assert.deepEqual(await listed('?status=finished'), [finished])
    assert.deepEqual(await listed('?status=failed'), [failed])
    assert.deepEqual(await listed('?status=running'), [])
    assert.sameMembers(await listed(''), [finished, parked, cancelled, failed])
    // The form drives the same filter.
    await page.goto(`${served.url}/admin/runs`)
    await page.locator('#f-status').selectOption('cancelled')
    await page.locator('form.filters button').click()
    await page.waitForURL(/status=cancelled/)
    assert.equal(await page.locator('table.runs .status').innerText(), 'cancelled')
    // The tool filter: runs that asked for `deploy`.
    assert.sameMembers(await listed('?tool=deploy'), [parked, cancelled])
    assert.deepEqual(await listed('?tool=deploy&status=parked'), [parked])
    // The run view of the cancelled run marks it.
    await page.goto(`${served.url}/admin/runs/${cancelled}`)
    assert.equal(await page.locator('dd .status').innerText(), 'cancelled')
    assert.equal(await page.locator('svg.timeline g.cancel').count(), 1)
    assert.include(await page.locator('table.decisions tbody tr').innerText(), 'cancelled')
    assert.deepEqual(await seriousViolations(page), [])
  }).timeout(180_000)

  test('paging through many runs reaches every one exactly once, newest first', async ({
    assert,
  }) => {
    const served = await setup()
    const { sink } = served.agentStream
    const ids: string[] = []
    for (let i = 0; i < 110; i++) {
      const id = `many-${String(i).padStart(3, '0')}`
      await (await sink.open(id)).end()
      ids.push(id)
    }
    const page = await (
      await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    ).newPage()
    await page.goto(`${served.url}/admin/runs?status=finished`)
    const seen: string[] = []
    for (let pages = 1; ; pages++) {
      const onPage = await page
        .locator('table.runs tbody tr')
        .evaluateAll((rows) => rows.map((row) => (row as any).dataset.run as string))
      assert.isAtMost(onPage.length, 50)
      seen.push(...onPage)
      if (pages === 1) {
        // A run started while a person pages is not met again, nor does it shift the pages.
        const late = await sink.open('many-late')
        await late.end()
        assert.deepEqual(await seriousViolations(page), [])
      }
      const older = page.locator('a[rel=next]')
      if ((await older.count()) === 0) break
      await older.click()
      await page.waitForLoadState()
      assert.isBelow(pages, 10)
    }
    assert.lengthOf(seen, 110)
    assert.sameMembers(seen, ids)
    assert.equal(new Set(seen).size, 110)
    // Newest first: the order of the rows (created_at, then run id, descending).
    const created = new Map<string, number>()
    for (const id of ids) created.set(id, (await sink.head(id))!.createdAt)
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1], seen[i]]
      assert.isTrue(
        created.get(a)! > created.get(b)! || (created.get(a) === created.get(b) && a > b),
        `${a} before ${b}`
      )
    }
  }).timeout(180_000)

  test('hostile values: markup, bidi controls and long strings render as text, isolated; bad filters are refused by rule', async ({
    assert,
  }) => {
    const served = await setup()
    // 191 characters with its sub-agent's suffix: the longest run id there is.
    const longRun = `r${'a'.repeat(186)}`
    const longThread = `t${'b'.repeat(190)}`
    await served.start({ message: 'hostile', runId: longRun, threadId: longThread })
    await served.agentStream.parking.decisions.reject(
      `${longRun}.sub`,
      'h-1',
      served.decider('admin'),
      {
        reason: `${HTML}${BIDI}${LONG_REASON}`,
      }
    )
    await served.agentStream.driver.settled()
    const context = await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    const page = await context.newPage()
    const blocked: string[] = []
    page.on('console', (entry) => blocked.push(entry.text()))
    await page.goto(`${served.url}/admin/runs?tool=${encodeURIComponent(`${HTML}${BIDI}`)}`)
    assert.deepEqual(
      await page
        .locator('table.runs tbody tr')
        .evaluateAll((rows) => rows.map((row) => (row as any).dataset.run as string)),
      [longRun]
    )
    assert.equal(await page.inputValue('#f-tool'), `${HTML}${BIDI}`)
    await page.goto(`${served.url}/admin/runs?thread=${longThread}`)
    assert.include(await page.locator('table.runs').innerText(), longThread)
    assert.deepEqual(await seriousViolations(page), [])

    const response = await page.goto(`${served.url}/admin/runs/${longRun}`)
    const csp = response!.headers()['content-security-policy']
    assert.match(csp, /script-src 'nonce-[^']+'/)
    assert.notInclude(csp, 'unsafe-inline')
    await page.locator('svg.timeline').waitFor()
    // Nothing the run wrote became markup: no script, no image, nothing ran.
    assert.equal(await page.locator('main script, main img, svg script, svg image').count(), 0)
    await page.waitForTimeout(300)
    assert.isUndefined(await page.evaluate(() => (globalThis as any).pwned))
    // The sub-agent's lane: its name cut, its controls shown as markers, never acting.
    const lane = page.locator('svg.timeline g.lane.subagent')
    const name = (await lane.locator('.name').textContent())!
    assert.isAtMost([...name].length, 22)
    assert.notMatch(name, /[\u202A-\u202E\u2066-\u2069]/)
    const svgText = (await page.locator('svg.timeline').textContent())!
    assert.notMatch(svgText, /[\u202A-\u202E\u2066-\u2069]/)
    assert.include(svgText, '[U+202E]')
    assert.include(svgText, '<script>')
    // The reason, in the decisions table: whole, as text, isolated, its controls shown.
    const reason = page.locator('table.decisions tbody tr td').nth(9)
    const reasonText = await reason.innerText()
    assert.include(reasonText, `${HTML}evil [U+202E]gnp.exe[U+202C]`)
    assert.include(reasonText, LONG_REASON)
    assert.equal(
      await reason.evaluate(
        (cell) => (globalThis as any).getComputedStyle(cell.querySelector('bdi')).unicodeBidi
      ),
      'isolate'
    )
    assert.notMatch(await page.locator('main').innerText(), /[\u202A-\u202E\u2066-\u2069]/)
    // The page keeps its width: long values wrap instead of widening it.
    const overflow = await page.evaluate(() => {
      const { document } = globalThis as any
      return document.documentElement.scrollWidth - document.documentElement.clientWidth
    })
    assert.isAtMost(overflow, 0)
    assert.deepEqual(await seriousViolations(page), [])
    assert.deepEqual(
      blocked.filter((text) => /Content Security Policy/.test(text)),
      [],
      'the page itself needs nothing the policy refuses'
    )

    // Filters and run ids outside their rules: refused by rule, never echoed.
    const bad = await fetch(
      `${served.url}/admin/runs?thread=${encodeURIComponent(HTML)}&status=${encodeURIComponent(BIDI)}`,
      { headers: ADMIN }
    )
    assert.equal(bad.status, 400)
    const badText = await bad.text()
    assert.include(badText, 'Invalid filter: &quot;status&quot; fails the &quot;enum&quot; rule')
    assert.include(badText, '&quot;thread&quot; fails the &quot;regex&quot; rule')
    assert.notInclude(badText, 'pwned')
    assert.notInclude(badText, '\u202E')
    const missing = await fetch(`${served.url}/admin/runs/${encodeURIComponent(HTML)}`, {
      headers: ADMIN,
    })
    assert.equal(missing.status, 404)
    assert.notInclude(await missing.text(), 'pwned')
  }).timeout(180_000)

  test('denied without the admin hook (403), list and run view alike', async ({ assert }) => {
    const served = await setup()
    const runId = await served.start({ message: 'hello' })
    for (const path of ['/admin/runs', `/admin/runs/${runId}`, '/admin/runs?status=failed']) {
      const response = await fetch(`${served.url}${path}`, { headers: { 'x-user': 'alice' } })
      assert.equal(response.status, 403, path)
      assert.notInclude(await response.text(), runId)
    }
  }).timeout(180_000)
})

test.group('Admin console | the Stop button', () => {
  test('a running run stopped from its view in Chromium: the agent aborts, the run is cancelled, what it said stays', async ({
    assert,
    cleanup,
  }) => {
    const served = await setup()
    const response = await postJson(`${served.url}/runs`, { message: 'talk' })
    const { runId } = (await response.json()) as { runId: string }
    // Should the test fail first, its agent is stopped (the server's cleanup waits for it).
    cleanup(() => void served.agentStream.driver.stop(runId))
    for (let i = 0; i < 200; i++) {
      const row = await served.db
        .from('agent_stream_frames')
        .where('run_id', runId)
        .where('kind', 'text')
        .first()
      if (row) break
      await sleep(20)
    }
    const context = await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${served.url}/admin/runs/${runId}`)
    assert.equal(await page.locator('dd .status').innerText(), 'running')
    await page.getByRole('button', { name: 'Stop the run' }).click()
    await page.locator('p.notice').waitFor()
    assert.equal(await page.locator('p.notice').innerText(), 'The run was stopped.')
    assert.equal(await page.locator('dd .status').innerText(), 'cancelled')
    assert.include(await page.locator('.transcript').innerText(), 'Talking until stopped.')
    // A finished run has no Stop button; a forged post without the token stops nothing.
    assert.equal(await page.getByRole('button', { name: 'Stop the run' }).count(), 0)
    const forged = await fetch(`${served.url}/admin/runs/${runId}/stop`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'mode=rollback',
    })
    assert.equal(forged.status, 403)
    const row = await served.db.from('agent_streams').where('run_id', runId).first()
    assert.equal(row.stop_mode, 'keep')
    assert.deepEqual(errors, [])
    await context.close()
  }).timeout(60_000)
})
