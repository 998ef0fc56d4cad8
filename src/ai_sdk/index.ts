/**
 * `adonis-agent-stream/ai-sdk`: run agents written with the AI SDK 7 (`ai`, an optional peer)
 * as this package's runner. Kept off the package root so the root never loads `ai`.
 */
export { aiSdkAgent } from './agent.js'
export type { AiSdkAgentOptions, AiSdkRunnerOptions, StreamTextSettings } from './agent.js'
export { askTool } from './ask_tool.js'
export type { AskInput, AskOutput } from './ask_tool.js'
export type { ApprovalOptions, AiSdkCheckpoint } from './parts.js'
export { completedCalls, framesToMessages, resumeMessages, userContent } from './history.js'
export { inputMessages } from './input.js'
export { DENIAL_SENTENCES, denialReason } from './denial.js'
export { failureCode } from './failure.js'
