import { getActiveTest } from '@japa/runner'
import { chromium, type Browser } from 'playwright-core'
import { within } from './bounded.js'

/**
 * A headless Chromium (Debian's package, `/usr/bin/chromium`, or `CHROMIUM_PATH`), closed when
 * the running test ends. Its launch is bounded (60 s, Playwright's own timeout) and so is its
 * close in the test's cleanup (20 s), which Japa's test timeout does not cover: a browser that
 * hangs fails its test with a clear error instead of hanging the run.
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
  const browser = await chromium
    .launch({ executablePath, args: ['--no-sandbox'], timeout: 60_000 })
    .catch((error: Error) => {
      throw new Error(`Chromium (${executablePath}) did not launch: ${error.message}`)
    })
  getActiveTest()?.cleanup(() =>
    within(browser.close(), 20_000, `Chromium (${executablePath}) did not close`)
  )
  return browser
}
