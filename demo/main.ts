/**
 * `npm run demo`: the demo app (chat page + admin page) until Ctrl+C.
 * `npm run demo -- --check`: one whole scenario with the official AG-UI client; exits 0 or 1.
 */
import { startDemo } from './server.js'
import { runCheck } from './check.js'

if (process.argv.includes('--check')) {
  try {
    await runCheck()
    console.log('check: passed')
    process.exit(0)
  } catch (error) {
    console.error(`check: FAILED: ${(error as Error).message}`)
    process.exit(1)
  }
} else {
  const demo = await startDemo()
  console.log('Press Ctrl+C to stop.')
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    console.log('Stopping…')
    await demo.stop()
    process.exit(0)
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
