/**
 * `adonis-agent-stream/ai-sdk`: run agents written with the AI SDK 7 (`ai`, an optional peer)
 * as this package's runner (docs/ai-sdk.md). Kept off the package root so the root never loads
 * `ai`. What an app calls: `aiSdkAgent(options)` for the runner, `askTool()` for a tool that asks
 * the person a question set; the types are their options and the asking tool's input and result.
 */
export { aiSdkAgent } from './agent.js'
export type { AiSdkAgentOptions } from './agent.js'
export type { ApprovalOptions } from './parts.js'
export { askTool } from './ask_tool.js'
export type { AskInput, AskOutput } from './ask_tool.js'
export type { SharedState } from './shared_state.js'
