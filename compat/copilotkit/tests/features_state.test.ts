import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import {
  assertClean,
  assistantText,
  featureSuite,
  runOver,
  say,
  until,
} from './features_harness.ts'
import { RECIPE, STORY } from '../features/agents_state.ts'

/**
 * The AG-UI dojo's state and frontend-tool features (its `server-starter-all-features` tests),
 * driven by CopilotKit's React chat in Chromium against scripted agents on the package: human
 * in the loop, agentic generative UI, shared state (and a reload mid-run), predictive state
 * updates.
 */

let suite: Awaited<ReturnType<typeof featureSuite>>
before(async () => {
  suite = await featureSuite()
})
after(async () => {
  await suite?.stop()
})

/** The text of every element of `testId` under `within`. */
const texts = (page: Page, testId: string) => page.getByTestId(testId).allInnerTexts()

test('human in the loop: the steps render, Confirm sends the choice, the agent goes on with it', async () => {
  const { page, errors } = await suite.open('human_in_the_loop')
  await say(page, 'Hi')
  const plan = page.getByTestId('select-steps')
  await plan.getByTestId('step-item').nth(9).waitFor({ timeout: 30_000 })
  const confirm = page.getByRole('button', { name: 'Confirm' })
  await confirm.waitFor({ timeout: 30_000 })
  assert.deepEqual(
    await texts(page, 'step-text'),
    Array.from({ length: 10 }, (_, i) => `Step ${i + 1}`)
  )
  // Leave two steps out: the agent is told the eight that are left.
  await plan.getByTestId('step-item').nth(2).locator('input').uncheck()
  await plan.getByTestId('step-item').nth(5).locator('input').uncheck()
  await confirm.click()
  await confirm.waitFor({ state: 'hidden', timeout: 30_000 })
  await page.getByText("Ok! I'm working on it: 8 steps.").waitFor({ timeout: 30_000 })
  await runOver(page)
  await assertClean(page, errors)
  await page.close()
})

test('agentic generative UI: the steps come as state and complete one by one', async () => {
  const { page, errors } = await suite.open('agentic_generative_ui')
  await say(page, 'Hi')
  const progress = page.getByTestId('task-progress')
  await progress.waitFor({ timeout: 30_000 })
  assert.equal(await progress.getByTestId('task-step-text').count(), 10)
  // While the agent works some steps are done and some not.
  await progress.locator('[data-status="completed"]').first().waitFor({ timeout: 30_000 })
  await page.getByText('All 10 steps are completed.').waitFor({ timeout: 30_000 })
  assert.equal(await progress.locator('[data-status="completed"]').count(), 10)
  assert.deepEqual(
    await texts(page, 'task-step-text'),
    Array.from({ length: 10 }, (_, i) => `Step ${i + 1}`)
  )
  await runOver(page)
  await assertClean(page, errors)
  await page.close()
})

/** The ingredient cards' names, as the page shows them. */
const ingredientNames = (page: Page) =>
  page
    .locator('.ingredient-card .ingredient-name-input')
    .evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value))

test('shared state: the agent writes the recipe; an ingredient added on the page reaches it and stays', async () => {
  const { page, errors } = await suite.open('shared_state')
  await page.getByTestId('add-ingredient').click()
  const card = page.locator('.ingredient-card').last()
  await card.locator('.ingredient-name-input').fill('Potatoes')
  await card.locator('.ingredient-amount-input').fill('12')
  await say(page, 'Give me all the ingredients')
  await page.getByText('Your recipe has 5 ingredients and 3 steps.').waitFor({ timeout: 30_000 })
  assert.deepEqual(await ingredientNames(page), [
    'Potatoes',
    ...RECIPE.ingredients.map((item) => item.name),
  ])
  assert.deepEqual(await texts(page, 'instruction-item'), RECIPE.instructions)
  await runOver(page)
  await assertClean(page, errors)
  await page.close()
})

test('shared state, re-attached: a reload mid-recipe ends with the whole recipe', async () => {
  const { page, errors } = await suite.open('shared_state')
  await say(page, 'Please give me a pasta recipe of your choosing')
  await page.locator('.ingredient-card').nth(1).waitFor({ timeout: 30_000 })
  assert.doesNotMatch(
    await assistantText(page),
    /Your recipe/,
    'still working when the page reloads'
  )
  await page.reload()
  await page.getByText('Your recipe has 4 ingredients and 3 steps.').waitFor({ timeout: 60_000 })
  assert.deepEqual(
    await ingredientNames(page),
    RECIPE.ingredients.map((item) => item.name)
  )
  assert.deepEqual(await texts(page, 'instruction-item'), RECIPE.instructions)
  await assertClean(page, errors)
  await page.close()
})

/** Ask for a story, wait for confirm_changes to wait, answer it; the agent's reply follows. */
async function predictive(
  page: Page,
  prompt: string,
  button: 'confirm' | 'reject',
  timeout = 30_000
) {
  await say(page, prompt)
  const document = page.getByTestId('document')
  // The `/v2` provider does not stream the PredictState argument into the state (the v1
  // provider's listeners do): the story comes with the snapshot after the call.
  await document.filter({ hasText: 'Once upon a time' }).waitFor({ timeout })
  const modal = page.getByTestId('confirm-changes-modal').last()
  const answer = modal.getByTestId(`${button}-button`)
  await answer.waitFor({ timeout })
  // Enabled once the call's arguments are whole and the run ended with it open.
  await until(() => answer.isEnabled(), 'confirm_changes to wait for an answer', timeout)
  assert.equal(await document.innerText(), STORY)
  await answer.click()
  await modal.getByText(button === 'confirm' ? '✓ Accepted' : '✗ Rejected').waitFor({ timeout })
  const reply = button === 'confirm' ? 'Ok! The story is saved.' : 'Ok, the changes are rejected.'
  await page.getByText(reply).waitFor({ timeout })
  assert.equal(await document.innerText(), STORY)
  await runOver(page)
}

test('predictive state updates: PredictState, the document streamed as a call argument, confirm_changes asks, Confirm goes on', async () => {
  const { page, errors } = await suite.open('predictive_state_updates')
  await predictive(page, 'Write a story', 'confirm')
  await assertClean(page, errors)
  await page.close()
})

test('predictive state updates: Reject, and the agent says so', async () => {
  const { page, errors } = await suite.open('predictive_state_updates')
  await predictive(page, 'Write a story', 'reject')
  await assertClean(page, errors)
  await page.close()
})

test('a frontend call answered in the turn of a backend call with its result: both results come back, the run goes on', async () => {
  const { page, errors } = await suite.open('predictive_state_updates')
  try {
    await predictive(page, 'Write a story with a result', 'confirm', 10_000)
    await assertClean(page, errors)
  } finally {
    await page.close()
  }
})
