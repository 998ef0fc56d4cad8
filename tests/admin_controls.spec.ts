import { test } from '@japa/runner'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { launchBrowser } from './helpers/browser.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'

const ADMIN = { 'x-admin': 'yes', 'x-user': 'alice' }

/**
 * Characters that must never act in the console: bidi embeddings, overrides, isolates and
 * marks; C0 and C1 controls (NUL aside: PostgreSQL text cannot hold it); the line and
 * paragraph separators; the byte order mark.
 */
const CONTROLS =
  '\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200E\u200F\u061C\u0001\u001B\u007F\u0085\u009B\u2028\u2029\uFEFF'
const UNSAFE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0001-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069\uFEFF]/
const HOSTILE = `evil ${CONTROLS}gnp.exe`

const said = (ctx: RunContext) => (ctx.input as { message?: string } | null)?.message ?? ''

/** A sub-agent named with every control asks approval of a tool named so, with text and props holding them. */
const runner: AgentRunner = {
  async start(ctx) {
    const child = ctx.child(`${ctx.runId}.sub`, { name: HOSTILE })
    await child.writer.write({ t: 'text', v: `Said ${HOSTILE}. ` })
    await child.writer.write({ t: 'component', name: 'card', data: { title: HOSTILE } })
    await child.writer.write({
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: 'h-1',
        name: HOSTILE,
        input: { note: HOSTILE },
        toolKind: 'action',
      },
    })
    await child.writer.write({
      t: 'approval',
      runId: child.runId,
      id: 'h-1',
      toolName: HOSTILE,
      input: { note: HOSTILE },
      confirmation: { title: HOSTILE, description: HOSTILE },
    })
    if (said(ctx) === 'park') return { status: 'parked', checkpoint: { step: 1 } }
    return { status: 'parked', checkpoint: { step: 1 } }
  },
  async resume(ctx) {
    await ctx.finish()
    return { status: 'finished' }
  },
}

test.group('Admin console | control characters from stored content', () => {
  test('no page renders a bidi or control character raw, in any attribute or text', async ({
    assert,
  }) => {
    const served = await serveApp({ runner })
    await resetTables(await served.app.container.make('lucid.db'))
    const start = async (threadId: string) => {
      const response = await postJson(`${served.url}/runs`, { message: 'park', threadId })
      assert.equal(response.status, 201)
      await served.agentStream.driver.settled()
      return ((await response.json()) as { runId: string }).runId
    }
    const parked = await start('thread-parked')
    const decided = await start('thread-decided')
    await served.agentStream.parking.decisions.reject(
      `${decided}.sub`,
      'h-1',
      { principal: { id: 'alice' }, via: 'admin' },
      { reason: HOSTILE }
    )
    await served.agentStream.driver.settled()
    const pages = [
      '/admin',
      '/admin/history',
      `/admin/items/${parked}.sub/h-1`,
      `/admin/items/${decided}.sub/h-1`,
      '/admin/runs',
      `/admin/runs/${parked}`,
      `/admin/runs/${decided}`,
    ]
    for (const path of pages) {
      const response = await fetch(`${served.url}${path}`, { headers: ADMIN })
      assert.equal(response.status, 200, path)
      // A form's `value` is data, never shown: it must survive the round trip (a filter by a
      // tool of that name); everything else people read or hear.
      const html = (await response.text()).replace(/ value="[^"]*"/g, '')
      const found = html.match(UNSAFE)
      assert.isNull(
        found,
        `${path}: U+${found?.[0].codePointAt(0)!.toString(16)} at ${found?.index}: ${html.slice((found?.index ?? 0) - 80, (found?.index ?? 0) + 20)}`
      )
      // The person sees that the value held them (the runs list shows none of these values).
      if (path !== '/admin/runs') assert.include(html, '[U+202E]', path)
    }
    // In Chromium: the sub-agent's section is labelled with its markers, never its controls.
    const page = await (
      await (await launchBrowser()).newContext({ extraHTTPHeaders: ADMIN })
    ).newPage()
    await page.goto(`${served.url}/admin/runs/${parked}`)
    const label = await page.locator('section.sub').first().getAttribute('aria-label')
    assert.include(label, 'Sub-agent evil [U+202A][U+202B]')
    assert.notMatch(label!, UNSAFE)
  }).timeout(120_000)
})
