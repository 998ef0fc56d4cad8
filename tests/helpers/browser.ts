import { getActiveTest } from '@japa/runner'
import { chromium, type Browser } from 'playwright-core'

/**
 * A headless Chromium (Debian's package, `/usr/bin/chromium`, or `CHROMIUM_PATH`), closed when
 * the running test ends.
 */
export async function launchBrowser(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  })
  getActiveTest()?.cleanup(() => browser.close())
  return browser
}
