import { runnerConformance } from './helpers/runner_conformance.js'

runnerConformance('AI SDK', new URL('../demo/agents/ai_sdk.ts', import.meta.url))
