import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import assert from 'node:assert/strict'
import { HttpAgent } from '@ag-ui/client'
import { CopilotRuntime, createCopilotRuntimeHandler } from '@copilotkit/runtime/v2'
import { createCopilotNodeHandler } from '@copilotkit/runtime/v2/node'
import { chromium, type Browser, type Page } from 'playwright-core'
import { AgentStreamRunner } from '../../../src/copilotkit/index.ts'
import { startFeatureServer } from '../features/server.ts'
import { FEATURES, type Feature } from '../features/agents.ts'
import { bundlePage } from './page.ts'

process.env.COPILOTKIT_TELEMETRY_DISABLED = 'true'

/**
 * The feature suite's stack: the AG-UI server (features/server.ts: one route per feature, on a
 * private SQLite file), CopilotKit's runtime in this process with one agent per feature (each an
 * `HttpAgent` on its route, the package's runner re-attaching to the same), the feature page
 * (page/features.tsx) on the runtime's origin, and Chromium.
 */
export async function featureSuite() {
  const dbFile = join(tmpdir(), `agent-stream-features-${randomUUID()}.sqlite3`)
  const agui = await startFeatureServer(dbFile)
  const agents = Object.fromEntries(
    FEATURES.map((feature) => [feature, new HttpAgent({ url: `${agui.url}/${feature}` })])
  )
  const runtime = new CopilotRuntime({
    agents,
    runner: new AgentStreamRunner({ url: (agentId) => `${agui.url}/${agentId}` }),
  })
  const handler = createCopilotNodeHandler(
    createCopilotRuntimeHandler({ runtime, basePath: '/api/copilotkit' })
  )
  const files = await bundlePage('features.tsx')
  const server: Server = createServer((request, response) => {
    const file = files[new URL(request.url!, 'http://x').pathname]
    if (!file) return (handler as any)(request, response)
    response.writeHead(200, { 'content-type': file.type }).end(file.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await agui.stop()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true })
  }
  let browser: Browser
  try {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox'],
    })
  } catch (error) {
    await close()
    throw error
  }
  return {
    agui,
    /** A new tab on `feature`'s page, on a thread of its own; `errors` collects page errors. */
    async open(feature: Feature) {
      const page = await browser.newPage({ viewport: { width: 1100, height: 800 } })
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      const threadId = `${feature}-${randomUUID()}`
      await page.goto(`${origin}/?feature=${feature}&thread=${threadId}`)
      await page.getByTestId('copilot-chat-textarea').waitFor({ timeout: 60_000 })
      return { page, errors, threadId }
    },
    async stop() {
      await browser.close()
      await close()
    },
  }
}

/** Type `text` into CopilotChat and send it. */
export async function say(page: Page, text: string) {
  const input = page.getByTestId('copilot-chat-textarea')
  await input.fill(text)
  await input.press('Enter')
}

/** The chat's assistant messages' text, joined. */
export async function assistantText(page: Page) {
  const texts = await page.getByTestId('copilot-assistant-message').allInnerTexts()
  return texts.join('\n')
}

/** Wait until CopilotKit says the run is over (the send button is back). */
export async function runOver(page: Page) {
  await page
    .getByTestId('copilot-send-button')
    .locator('.lucide-arrow-up')
    .waitFor({ timeout: 30_000 })
}

/** No page error, nothing CopilotKit reported, no "Agent run failed" on the page. */
export async function assertClean(page: Page, errors: string[]) {
  assert.doesNotMatch(await page.locator('body').innerText(), /Agent run failed/)
  assert.deepEqual(await page.evaluate(() => (window as any).copilotErrors as string[]), [])
  assert.deepEqual(errors, [])
}

/** Wait until `check()` resolves true. */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
