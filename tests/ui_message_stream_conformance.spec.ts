import { runnerConformance } from './helpers/runner_conformance.js'

runnerConformance(
  'UI message stream',
  new URL('../demo/agents/ui_message_stream.ts', import.meta.url)
)
