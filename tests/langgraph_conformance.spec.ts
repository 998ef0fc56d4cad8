import { runnerConformance } from './helpers/runner_conformance.js'

runnerConformance('LangGraph', new URL('../demo/agents/langgraph.ts', import.meta.url))
