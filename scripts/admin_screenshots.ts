/**
 * The README's pictures of the admin console: `docs/admin-queue.png` and `docs/admin-item.png`,
 * taken in Chromium from a real app on SQLite with a few parked runs.
 *
 *   DB=sqlite ./node_modules/.bin/node --import=@poppinss/ts-exec scripts/admin_screenshots.ts
 */
import { mkdirSync } from 'node:fs'
import { chromium } from 'playwright-core'
import type { AgentRunner } from '../src/runner/contract.js'
import { resetTables } from '../tests/helpers/db.js'
import { postJson, serveApp } from '../tests/helpers/http.js'

process.env.DB ??= 'sqlite'

const TOOLS = [
  ['send_email', { to: 'team@example.com', subject: 'Weekly report', attach: ['numbers.csv'] }],
  ['refund_order', { orderId: 'A-1042', amount: 129.5, currency: 'EUR' }],
  ['deploy', { service: 'billing', version: '2.14.0', region: 'eu-west-1' }],
  ['delete_rows', { table: 'sessions', where: { expired: true } }],
] as const

const runner: AgentRunner = {
  async start(ctx) {
    const n = Number((ctx.input as { message: string }).message)
    const [tool, input] = TOOLS[n % TOOLS.length]
    await ctx.writer.write({ t: 'text', v: 'Let me look up last week\u2019s numbers first. ' })
    await ctx.writer.write({
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: `search_${n}`,
        name: 'search',
        input: { q: 'weekly numbers' },
        toolKind: 'read',
      },
    })
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'tool-output', id: `search_${n}`, output: { revenue: 42_000, orders: 318 } },
    })
    await ctx.writer.write({ t: 'text', v: 'Revenue was 42k over 318 orders. ' })
    if (n % 5 === 4) {
      await ctx.writer.write({
        t: 'elicitation',
        runId: ctx.runId,
        id: `ask_${n}`,
        request: {
          id: `ask_${n}`,
          source: 'ask',
          preamble: 'Two quick questions before I send it.',
          questions: [
            {
              id: 'format',
              prompt: 'Which format?',
              options: [
                { value: 'csv', label: 'CSV' },
                { value: 'pdf', label: 'PDF' },
              ],
              defaults: ['csv'],
            },
          ],
        },
      })
    } else {
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id: `call_${n}`,
        toolName: tool,
        input,
        approver: n % 3 === 0 ? 'finance' : 'requester',
        expiresAt: new Date(Date.now() + (n + 1) * 3_600_000).toISOString(),
        confirmation: {
          title: tool === 'send_email' ? 'Send the weekly report?' : `Run ${tool}?`,
          description: 'This acts outside the conversation.',
        },
      })
    }
    return { status: 'parked', checkpoint: {} }
  },
  async resume() {
    return { status: 'finished' }
  },
}

const served = await serveApp({ runner })
await resetTables(await served.app.container.make('lucid.db'))
for (let n = 11; n >= 0; n--) {
  await postJson(`${served.url}/runs`, { message: String(n) })
  await served.agentStream.driver.settled()
}
mkdirSync(new URL('../docs/', import.meta.url), { recursive: true })
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
})
const page = await browser.newPage({
  viewport: { width: 1280, height: 640 },
  extraHTTPHeaders: { 'x-admin': 'yes', 'x-user': 'alice' },
})
await page.goto(`${served.url}/admin`)
await page.keyboard.press('j')
await page.screenshot({ path: 'docs/admin-queue.png' })
await page.goto(`${served.url}/admin`)
await page.locator('#list a.open').first().click()
await page.locator('article.item').waitFor()
await page.setViewportSize({ width: 1280, height: 1100 })
await page.screenshot({ path: 'docs/admin-item.png' })
await browser.close()
served.agentStream.http.closeAll()
served.http.closeAllConnections()
process.exit(0)
