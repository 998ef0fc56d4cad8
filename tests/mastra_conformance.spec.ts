import { runnerConformance } from './helpers/runner_conformance.js'

runnerConformance('Mastra', new URL('../demo/agents/mastra.ts', import.meta.url))
