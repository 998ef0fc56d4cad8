/**
 * `adonis-agent-stream/openai-agents`: run an `Agent` of the OpenAI Agents SDK (`@openai/agents`,
 * an optional peer) as this package's runner (docs/runners/openai_agents.md). Kept off the
 * package root so the root never loads the SDK. What an app calls: `openAiAgent(options)`; the
 * types are its options, how approvals are asked, and the checkpoint a parked run keeps.
 */
export { openAiAgent } from './agent.js'
export type { OpenAiAgentOptions, OpenAiRunOptions } from './agent.js'
export type { ApprovalOptions } from './events.js'
export type { OpenAiAgentsCheckpoint } from './checkpoint.js'
