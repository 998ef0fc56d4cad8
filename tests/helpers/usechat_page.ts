import { readFile } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import type { Page } from 'playwright-core'
import type { AgentRunner } from '../../src/runner/contract.js'
import { bundleUseChat } from '../../demo/bundle.js'
import { resetTables } from './db.js'
import { serveApp } from './http.js'
import { launchBrowser } from './browser.js'

/**
 * The demo's `useChat` page (React + `useChat` from `@ai-sdk/react`, bundled with esbuild) in
 * Chromium against the door's routes: the page and its script are served on the app's origin
 * (Playwright fulfils those two paths), every request acts for alice (`x-user`). `recheckMs`:
 * how often a page showing an ask checks for a decision made elsewhere (0: never);
 * `multitaskStrategy`: the policy the page's transport sends in its `body` (none: the door's);
 * `durableApi`: the page reads its answers through the Durable Streams transport at that `api`.
 */
export async function openPage(
  runner: AgentRunner,
  options: { recheckMs?: number; multitaskStrategy?: string; durableApi?: string } = {}
) {
  const served = await serveApp({ runner })
  await resetTables(await served.app.container.make('lucid.db'))
  const strategy =
    (options.multitaskStrategy ? ` data-multitask-strategy="${options.multitaskStrategy}"` : '') +
    (options.durableApi ? ` data-durable-api="${options.durableApi}"` : '')
  const html = (
    await readFile(new URL('../../demo/public/usechat.html', import.meta.url), 'utf8')
  ).replace(
    'data-api="/agent/chat"',
    `data-api="/chat" data-recheck-ms="${options.recheckMs ?? 0}"${strategy}`
  )
  const script = await bundleUseChat()
  const browser = await launchBrowser()
  const context = await browser.newContext({ extraHTTPHeaders: { 'x-user': 'alice' } })
  await context.route(
    (url) => url.pathname === '/usechat' || url.pathname === '/usechat.js',
    (route) =>
      new URL(route.request().url()).pathname === '/usechat'
        ? route.fulfill({ contentType: 'text/html; charset=utf-8', body: html })
        : route.fulfill({ contentType: 'text/javascript; charset=utf-8', body: script })
  )
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  const chatId = `chat-${randomUUID()}`
  await page.goto(`${served.url}/usechat?chat=${chatId}`)
  return { page, errors, served, chatId }
}

export const lastAssistant = (page: Page) => page.locator('.assistant').last()

/** The text parts of the page's last assistant message, joined. */
export const textOf = async (page: Page) =>
  (await lastAssistant(page).locator('.text').allTextContents()).join('')

/**
 * After a reload mid-answer: wait until the resumed stream is what the page shows. The stored
 * messages (`GET /chat/:id/messages`) show the turn's text at once; the resume then resets the
 * message at its first `start` (status `streaming`) and replays it, so the text is read only once
 * the replay has brought `text` back.
 */
export async function resumed(page: Page, text: string) {
  await page.locator('#status', { hasText: 'streaming' }).waitFor()
  await lastAssistant(page).locator('.text', { hasText: text }).waitFor()
}

/** What the page shows of each message of `role` (`user`, `assistant`), in order. */
export const said = (page: Page, role: 'user' | 'assistant') =>
  page.locator(`#log > .${role}`).evaluateAll((nodes) => nodes.map((n) => n.textContent))

/** No error on the page: neither thrown nor shown (`role=alert`). */
export async function noError(
  assert: { deepEqual: Function; isNull: Function },
  page: Page,
  errors: string[]
) {
  assert.deepEqual(errors, [])
  assert.isNull(
    await page
      .getByRole('alert')
      .textContent({ timeout: 100 })
      .catch(() => null)
  )
}

/** Once the page is ready, type `text` and click Send. */
export async function send(page: Page, text: string) {
  await page.locator('#status', { hasText: 'ready' }).waitFor()
  await page.fill('#message', text)
  await page.getByRole('button', { name: 'Send' }).click()
}

/**
 * Reads, says "Revenue " and waits for `gate` (the test opens it: the answer is cut mid-text
 * for as long as the test needs), says the rest, then asks to send an email and parks.
 */
export function gatedAgent(gate: Promise<void>): AgentRunner {
  return {
    async start(ctx) {
      const id = `${ctx.runId}.call`
      await ctx.writer.write({ t: 'event', event: { kind: 'step-start' } })
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: `${id}0`,
          name: 'search',
          input: { q: 'numbers' },
          toolKind: 'read',
        },
      })
      await ctx.writer.write({
        t: 'event',
        event: { kind: 'tool-output', id: `${id}0`, output: { revenue: 42 } },
      })
      await ctx.writer.write({ t: 'text', v: 'Revenue ' })
      await ctx.writer.flush?.()
      await gate
      await ctx.writer.write({ t: 'text', v: 'was 42. ' })
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: `${id}1`,
          name: 'send_email',
          input: { to: 'team' },
          toolKind: 'action',
        },
      })
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id: `${id}1`,
        toolName: 'send_email',
        input: { to: 'team' },
      })
      return { status: 'parked', checkpoint: {} }
    },
    async resume(ctx) {
      const [item] = ctx.items
      if (item.status === 'approved') {
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'tool-output', id: item.id, output: { sent: true } },
        })
        await ctx.writer.write({ t: 'text', v: 'Sent. ' })
      } else await ctx.writer.write({ t: 'text', v: `Not sent (${item.status}). ` })
      await ctx.writer.write({ t: 'text', v: 'All done.' })
      return { status: 'finished' }
    },
  }
}
