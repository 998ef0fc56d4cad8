import { runnerConformance } from './helpers/runner_conformance.js'

runnerConformance('AG-UI agent', new URL('../demo/agents/agui_agent.ts', import.meta.url))
