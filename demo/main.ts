/**
 * `npm run demo`: the demo app (chat page + admin page) until Ctrl+C.
 * `npm run demo -- --check`: one whole scenario with the official AG-UI client; exits 0 or 1.
 * `--agent <name>`: a framework's runner instead (demo/agents: `openai-agents`, `langgraph`,
 * `mastra`, `agui-agent`, `ui-message-stream`), playing the email scenario; with `--check`, that
 * scenario checked with the official clients.
 */
import { startDemo } from './server.js'
import { runCheck } from './check.js'
import { runEmailCheck } from './email_check.js'

const at = process.argv.indexOf('--agent')
const agent = at === -1 ? undefined : process.argv[at + 1]

if (process.argv.includes('--check')) {
  try {
    if (agent && agent !== 'ai-sdk') await runEmailCheck(agent)
    else await runCheck()
    console.log('check: passed')
    process.exit(0)
  } catch (error) {
    console.error(`check: FAILED: ${(error as Error).message}`)
    process.exit(1)
  }
} else {
  const demo = await startDemo({ agent }).catch((error: Error) => {
    console.error(`demo: ${error.message}`)
    process.exit(1)
  })
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
