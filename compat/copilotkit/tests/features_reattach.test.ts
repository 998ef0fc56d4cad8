import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { assertClean, featureSuite, runOver, say, until } from './features_harness.ts'
import { HAIKU } from '../features/agents.ts'
import { STORY } from '../features/agents_state.ts'
import { running, streaming } from '../features/script.ts'

/**
 * The AG-UI dojo's features re-attached mid-run (agentic chat and shared state are in their own
 * files): the page reloads while the scripted agent still writes (CopilotKit's `connect()`, the
 * package's runner re-attaching to the thread) and the end state is whole, nothing twice, no
 * error. The agents are paced (features/agents.ts, `featureAgents(pauseMs)`) so that the reload
 * lands mid-run.
 */

let suite: Awaited<ReturnType<typeof featureSuite>>
before(async () => {
  suite = await featureSuite()
})
after(async () => {
  await suite?.stop()
})

/**
 * Reload the page while `feature`'s agent runs: the reloaded page (its script loaded) re-attaches
 * to a run still going, not to a finished thread.
 */
async function reloadMidRun(page: Page, feature: string) {
  assert.ok(running.get(feature), `${feature} runs when the page reloads`)
  await page.reload()
  assert.ok(running.get(feature), `${feature} still runs when the page is back`)
}

/** How many elements show exactly `text`. */
const countText = (page: Page, text: string) => page.getByText(text, { exact: true }).count()

/** The person's message is on the page once, before the agent's answer. */
async function assertAskedOnce(page: Page, prompt: string) {
  assert.deepEqual(await page.getByTestId('copilot-user-message').allInnerTexts(), [prompt])
}

const TEN_STEPS = Array.from({ length: 10 }, (_, i) => `Step ${i + 1}`)

test('backend tool rendering, re-attached: a reload while the weather is fetched ends with one whole card', async () => {
  const { page, errors } = await suite.open('backend_tool_rendering')
  await say(page, 'Weather in Paris')
  const card = page.getByTestId('weather-card')
  await card.filter({ hasText: 'Paris' }).waitFor({ timeout: 30_000 })
  assert.doesNotMatch(await card.first().innerText(), /Humidity/, 'no result yet at the reload')
  await reloadMidRun(page, 'backend_tool_rendering')
  await card.filter({ hasText: 'Humidity' }).waitFor({ timeout: 60_000 })
  await page.getByText('Retrieved weather information!').waitFor({ timeout: 30_000 })
  await runOver(page)
  assert.equal(await card.count(), 1)
  const text = await card.innerText()
  assert.match(text, /Paris/)
  assert.match(text, /Current Weather: sunny/)
  assert.match(text, /Humidity 60%/)
  assert.equal(await countText(page, 'Retrieved weather information!'), 1)
  await assertAskedOnce(page, 'Weather in Paris')
  await assertClean(page, errors)
  await page.close()
})

/** Human in the loop after a reload: the ten steps once, Confirm with one left out goes on. */
async function confirmSteps(page: Page) {
  const plan = page.getByTestId('select-steps')
  await plan.getByTestId('step-item').nth(9).waitFor({ timeout: 60_000 })
  const confirm = page.getByRole('button', { name: 'Confirm' })
  await confirm.waitFor({ timeout: 30_000 })
  assert.equal(await plan.count(), 1)
  assert.deepEqual(await page.getByTestId('step-text').allInnerTexts(), TEN_STEPS)
  await plan.getByTestId('step-item').nth(4).locator('input').uncheck()
  await confirm.click()
  await confirm.waitFor({ state: 'hidden', timeout: 30_000 })
  await page.getByText("Ok! I'm working on it: 9 steps.").waitFor({ timeout: 30_000 })
  await runOver(page)
  assert.equal(await countText(page, "Ok! I'm working on it: 9 steps."), 1)
  assert.equal(await plan.count(), 1)
  await assertAskedOnce(page, 'Plan a trip')
}

test('human in the loop, re-attached: a reload while the steps stream; the steps come back, Confirm goes on', async () => {
  const { page, errors } = await suite.open('human_in_the_loop')
  await say(page, 'Plan a trip')
  await page.getByTestId('step-item').first().waitFor({ timeout: 30_000 })
  assert.ok((await page.getByTestId('step-item').count()) < 10, 'still streaming at the reload')
  await reloadMidRun(page, 'human_in_the_loop')
  await confirmSteps(page)
  await assertClean(page, errors)
  await page.close()
})

test('human in the loop, re-attached: a reload while Confirm waits; the card is back and Confirm still works', async () => {
  const { page, errors } = await suite.open('human_in_the_loop')
  await say(page, 'Plan a trip')
  const confirm = page.getByRole('button', { name: 'Confirm' })
  await confirm.waitFor({ timeout: 30_000 })
  await runOver(page)
  assert.equal(running.get('human_in_the_loop'), 0, 'the run ended with the call open')
  await page.reload()
  await confirmSteps(page)
  await assertClean(page, errors)
  await page.close()
})

test('agentic generative UI, re-attached: a reload while the steps complete ends with every step done, once', async () => {
  const { page, errors } = await suite.open('agentic_generative_ui')
  await say(page, 'Do the task')
  const progress = page.getByTestId('task-progress')
  await progress.locator('[data-status="completed"]').first().waitFor({ timeout: 30_000 })
  assert.ok(
    (await progress.locator('[data-status="completed"]').count()) < 10,
    'steps still pending at the reload'
  )
  await reloadMidRun(page, 'agentic_generative_ui')
  await page.getByText('All 10 steps are completed.').waitFor({ timeout: 60_000 })
  await runOver(page)
  assert.equal(await progress.count(), 1)
  assert.deepEqual(await page.getByTestId('task-step-text').allInnerTexts(), TEN_STEPS)
  assert.equal(await progress.locator('[data-status="completed"]').count(), 10)
  assert.equal(await countText(page, 'All 10 steps are completed.'), 1)
  await assertAskedOnce(page, 'Do the task')
  await assertClean(page, errors)
  await page.close()
})

test('tool-based generative UI, re-attached: a reload while the haiku streams ends with the haiku once', async () => {
  const { page, errors } = await suite.open('tool_based_generative_ui')
  await say(page, 'Generate Haiku for "I will always win"')
  const haiku = page.getByTestId('haiku-card')
  await haiku.getByTestId('haiku-line').first().waitFor({ timeout: 30_000 })
  assert.ok((await haiku.getByTestId('haiku-line').count()) < 3, 'still streaming at the reload')
  await reloadMidRun(page, 'tool_based_generative_ui')
  await page.getByText('Haiku created', { exact: true }).waitFor({ timeout: 60_000 })
  await runOver(page)
  assert.equal(await haiku.count(), 1)
  assert.deepEqual(await haiku.getByTestId('haiku-japanese').allInnerTexts(), HAIKU.japanese)
  assert.deepEqual(await haiku.getByTestId('haiku-english').allInnerTexts(), HAIKU.english)
  assert.equal(await countText(page, 'Haiku created'), 1)
  await assertAskedOnce(page, 'Generate Haiku for "I will always win"')
  await assertClean(page, errors)
  await page.close()
})

test('predictive state updates, re-attached: a reload while the document streams; it ends whole and Confirm goes on', async () => {
  const { page, errors } = await suite.open('predictive_state_updates')
  await say(page, 'Write a story')
  const document = page.getByTestId('document')
  // CopilotKit's v2 provider does not stream a PredictState argument into the state (only the
  // v1 provider's listeners do): the page shows the document with the snapshot after the call,
  // so the reload waits for the agent to be a few words into the document.
  const words = () => streaming.get('write_document_local') ?? 0
  await until(async () => words() >= 4, 'the document to be streaming')
  assert.equal(await document.innerText(), '', 'the document is not whole at the reload')
  await reloadMidRun(page, 'predictive_state_updates')
  const modal = page.getByTestId('confirm-changes-modal')
  const confirm = modal.getByTestId('confirm-button')
  await confirm.waitFor({ timeout: 60_000 })
  await until(() => confirm.isEnabled(), 'confirm_changes to wait for an answer')
  assert.equal(await document.innerText(), STORY)
  assert.equal(await modal.count(), 1)
  await confirm.click()
  await modal.getByText('✓ Accepted').waitFor({ timeout: 30_000 })
  await page.getByText('Ok! The story is saved.').waitFor({ timeout: 30_000 })
  await runOver(page)
  assert.equal(await document.innerText(), STORY)
  assert.equal(await modal.count(), 1)
  assert.equal(await countText(page, 'Ok! The story is saved.'), 1)
  await assertAskedOnce(page, 'Write a story')
  await assertClean(page, errors)
  await page.close()
})
