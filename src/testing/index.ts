/**
 * `adonis-agent-stream/testing`: helpers for a host app's tests, kept off the package root.
 */
export { scriptedAgent } from './scripted_agent.js'
export type { ScriptedAgentOptions } from './scripted_agent.js'
