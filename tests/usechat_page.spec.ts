import { test } from '@japa/runner'
import type { Page } from 'playwright-core'
import type { AgentRunner } from '../src/runner/contract.js'
import type { AgentStream } from '../src/agent_stream.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { jsonClient } from './helpers/http.js'
import {
  gatedAgent,
  lastAssistant,
  noError,
  openPage,
  said,
  send,
  resumed,
  textOf,
} from './helpers/usechat_page.js'

/**
 * The demo's `useChat` page in Chromium (`tests/helpers/usechat_page.ts`): streaming, a reload
 * mid-answer, approvals from the page and decided elsewhere, the stored history reloaded.
 */

/** Decide the chat's open approval elsewhere: the decision API (`POST /items/...`), as alice. */
async function decideElsewhere(
  served: { url: string; agentStream: AgentStream },
  page: Page,
  action: 'approve' | 'reject'
) {
  const streamRunId = (await lastAssistant(page).getAttribute('data-id'))!
  const [item] = await served.agentStream.parking.queries.pendingOf(streamRunId)
  const answer = await jsonClient(served.url)(
    'POST',
    `/items/${item.runId}/${item.itemId}/${action}`,
    {}
  )
  if (answer.status !== 200) throw new Error(`the decision API answered ${answer.status}`)
}

test.group('useChat page in Chromium', () => {
  test('a streamed answer, a reload mid-answer, an approval, a denial', async ({
    assert,
    cleanup,
  }) => {
    let open = () => {}
    const gate = new Promise<void>((resolve) => (open = resolve))
    const { page, errors } = await openPage(gatedAgent(gate))
    // Should the test fail before it opens the gate, its cleanup does (first: cleanups run last
    // registered first), so the run ends and the server's cleanup does not wait for it forever.
    cleanup(() => open())
    await send(page, 'Send the weekly report')
    // Streaming: the first words arrive while the agent is still writing.
    await lastAssistant(page).locator('.text', { hasText: 'Revenue' }).waitFor()
    const id = await lastAssistant(page).getAttribute('data-id')
    // A reload mid-answer: useChat({ resume: true }) replays the turn; no text twice, none lost.
    await page.reload()
    await resumed(page, 'Revenue')
    assert.equal(await textOf(page), 'Revenue ')
    open()
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    assert.equal(await lastAssistant(page).getAttribute('data-id'), id)
    assert.equal(await textOf(page), 'Revenue was 42. ')
    assert.lengthOf(await page.locator('.assistant').all(), 1)
    // The approval, from the page.
    await page.getByRole('button', { name: 'Approve' }).click()
    await lastAssistant(page).locator('.text', { hasText: 'All done.' }).waitFor()
    assert.equal(await textOf(page), 'Revenue was 42. Sent. All done.')
    assert.lengthOf(
      await lastAssistant(page).locator('.tool[data-state=output-available]').all(),
      2
    )
    // A second turn, denied.
    await send(page, 'Once more')
    await page.getByRole('button', { name: 'Reject' }).waitFor()
    await page.getByRole('button', { name: 'Reject' }).click()
    await lastAssistant(page).locator('.text', { hasText: 'All done.' }).waitFor()
    assert.equal(await textOf(page), 'Revenue was 42. Not sent (rejected). All done.')
    assert.equal(
      await lastAssistant(page).locator('.tool[data-state=output-denied] em').textContent(),
      'denied'
    )
    await noError(assert, page, errors)
  }).timeout(60_000)

  test("a finished chat reloaded: useChat({ messages }) from GET /chat/:chatId/messages shows the person's own messages too", async ({
    assert,
  }) => {
    let turn = 0
    const runner: AgentRunner = {
      async start(ctx) {
        turn += 1
        await ctx.writer.write({ t: 'text', v: `Answer ${turn}.` })
        return { status: 'finished' }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const { page, errors } = await openPage(runner)
    await send(page, 'Hello there')
    await lastAssistant(page).locator('.text', { hasText: 'Answer 1.' }).waitFor()
    await send(page, 'Second question')
    await lastAssistant(page).locator('.text', { hasText: 'Answer 2.' }).waitFor()
    await page.locator('#status', { hasText: 'ready' }).waitFor()
    await page.reload()
    await page.locator('.user', { hasText: 'Second question' }).waitFor()
    assert.deepEqual(await said(page, 'user'), ['Hello there', 'Second question'])
    assert.deepEqual(await said(page, 'assistant'), ['Answer 1.', 'Answer 2.'])
    // The chat goes on from the stored messages.
    await send(page, 'Third')
    await lastAssistant(page).locator('.text', { hasText: 'Answer 3.' }).waitFor()
    assert.deepEqual(await said(page, 'user'), ['Hello there', 'Second question', 'Third'])
    assert.deepEqual(errors, [])
  }).timeout(60_000)

  test('decided elsewhere first: the click shows the rest of the answer, and the decision made first', async ({
    assert,
  }) => {
    const { page, errors, served } = await openPage(scriptedAgent({ steps: ['read', 'approval'] }))
    await send(page, 'Send the weekly report')
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    // The admin approves while the page still shows its buttons; the person clicks Approve.
    await decideElsewhere(served, page, 'approve')
    assert.isTrue(await page.getByRole('button', { name: 'Approve' }).isVisible())
    await page.getByRole('button', { name: 'Approve' }).click()
    await lastAssistant(page).locator('.text', { hasText: 'All done.' }).waitFor()
    assert.equal(await textOf(page), 'Revenue was 42. Sent. All done.')
    assert.lengthOf(await page.getByRole('button', { name: 'Approve' }).all(), 0)
    await noError(assert, page, errors)
    // A conflict: the admin rejects, the person approves; the page shows the rejection.
    await send(page, 'Once more')
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    await decideElsewhere(served, page, 'reject')
    await page.getByRole('button', { name: 'Approve' }).click()
    await lastAssistant(page).locator('.text', { hasText: 'All done.' }).waitFor()
    assert.equal(await textOf(page), 'Revenue was 42. Not sent (rejected). All done.')
    assert.equal(
      await lastAssistant(page).locator('.tool[data-state=output-denied] em').textContent(),
      'denied'
    )
    const decided = await served.agentStream.parking.queries.list({ status: 'decided' })
    assert.deepEqual(
      decided.map((item) => [item.status, item.decidedVia]),
      [
        ['rejected', 'api'],
        ['approved', 'api'],
      ]
    )
    await noError(assert, page, errors)
  }).timeout(60_000)

  test('decided elsewhere while the page waits: it shows the continuation with no click', async ({
    assert,
  }) => {
    const { page, errors, served } = await openPage(
      scriptedAgent({ steps: ['read', 'approval'] }),
      { recheckMs: 100 }
    )
    await send(page, 'Send the weekly report')
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    await decideElsewhere(served, page, 'approve')
    await lastAssistant(page).locator('.text', { hasText: 'All done.' }).waitFor()
    assert.equal(await textOf(page), 'Revenue was 42. Sent. All done.')
    assert.lengthOf(await page.getByRole('button', { name: 'Approve' }).all(), 0)
    const [item] = await served.agentStream.parking.queries.list({ status: 'decided' })
    assert.equal(item.decidedVia, 'api')
    await noError(assert, page, errors)
  }).timeout(60_000)
})
