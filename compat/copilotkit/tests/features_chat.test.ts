import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { assertClean, assistantText, featureSuite, runOver, say } from './features_harness.ts'
import { HAIKU } from '../features/agents.ts'

/**
 * The AG-UI dojo's text and tool features (its `server-starter-all-features` tests), driven by
 * CopilotKit's React chat in Chromium against scripted agents on the package: agentic chat
 * (and a reload mid-answer), backend tool rendering, tool-based generative UI.
 */

let suite: Awaited<ReturnType<typeof featureSuite>>
before(async () => {
  suite = await featureSuite()
})
after(async () => {
  await suite?.stop()
})

const COUNTDOWN = /counting down:\s*10\s+9\s+8\s+7\s+6\s+5\s+4\s+3\s+2\s+1\s+✓/

test('agentic chat: the countdown from 10 to 1 with a tick', async () => {
  const { page, errors } = await suite.open('agentic_chat')
  await say(page, 'Hey there')
  await page.getByText('Hey there').waitFor({ timeout: 30_000 })
  const answer = page.getByTestId('copilot-assistant-message').filter({ hasText: 'counting down:' })
  await answer.waitFor({ timeout: 30_000 })
  await answer.filter({ hasText: '✓' }).waitFor({ timeout: 30_000 })
  assert.match(await answer.innerText(), COUNTDOWN)
  await runOver(page)
  await assertClean(page, errors)
  await page.close()
})

test('agentic chat, re-attached: a reload mid-countdown ends with the whole countdown, once', async () => {
  const { page, errors } = await suite.open('agentic_chat')
  await say(page, 'Count for me')
  await page.getByText(/counting down:\s*10\s+9/).waitFor({ timeout: 30_000 })
  assert.doesNotMatch(await assistantText(page), /✓/, 'still talking when the page reloads')
  await page.reload()
  const answer = page.getByTestId('copilot-assistant-message').filter({ hasText: 'counting down:' })
  await answer.filter({ hasText: '✓' }).waitFor({ timeout: 60_000 })
  assert.match(await answer.innerText(), COUNTDOWN)
  assert.equal(await answer.count(), 1)
  const text = await page.locator('body').innerText()
  assert.ok(text.indexOf('Count for me') < text.indexOf('counting down:'))
  await assertClean(page, errors)
  await page.close()
})

test('backend tool rendering: a weather card per city, from the call and its result', async () => {
  const { page, errors } = await suite.open('backend_tool_rendering')
  await say(page, 'Weather in San Francisco')
  const card = page.getByTestId('weather-card')
  await card.filter({ hasText: 'Humidity' }).waitFor({ timeout: 30_000 })
  const first = await card.first().innerText()
  assert.match(first, /San Francisco/)
  assert.match(first, /Current Weather: sunny/)
  assert.match(first, /Humidity 60%/)
  assert.match(first, /Wind 10 mph/)
  await page.getByText('Retrieved weather information!').waitFor({ timeout: 30_000 })
  await runOver(page)

  await say(page, 'Weather in New York')
  await card.nth(1).filter({ hasText: 'Humidity' }).waitFor({ timeout: 30_000 })
  assert.match(await card.nth(1).innerText(), /New York/)
  assert.equal(await card.count(), 2)
  await runOver(page)
  await assertClean(page, errors)
  await page.close()
})

test('tool-based generative UI: the haiku of the call, for two prompts', async () => {
  const { page, errors } = await suite.open('tool_based_generative_ui')
  for (const [n, prompt] of [
    'Generate Haiku for "I will always win"',
    'Generate Haiku for "The moon shines bright"',
  ].entries()) {
    await say(page, prompt)
    const haiku = page.getByTestId('haiku-card').nth(n)
    // The arguments stream a line at a time: the last English line comes last.
    await haiku.getByText(HAIKU.english[2]).waitFor({ timeout: 30_000 })
    assert.deepEqual(await haiku.getByTestId('haiku-japanese').allInnerTexts(), HAIKU.japanese)
    assert.deepEqual(await haiku.getByTestId('haiku-english').allInnerTexts(), HAIKU.english)
    await runOver(page)
  }
  assert.equal(await page.getByTestId('haiku-card').count(), 2)
  await assertClean(page, errors)
  await page.close()
})
