import { runnerConformance } from './helpers/runner_conformance.js'

runnerConformance('OpenAI Agents', new URL('../demo/agents/openai_agents.ts', import.meta.url))
