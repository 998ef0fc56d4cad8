export { langGraphAgent } from './agent.js'
export type { LangGraphAgentOptions, LangGraphCheckpoint, LangGraphGraph } from './agent.js'
export { requestApproval } from './request_approval.js'
export { CUSTOM_EVENT } from './chunks.js'
export type { CustomChunkMapper } from './chunks.js'
export { REJECTION_MESSAGES } from './resume_values.js'
export type {
  HitlRequest,
  LangGraphApprovalOptions,
  ToolCallInterrupt,
  ToolDecision,
} from './interrupts.js'
export { LucidSaver } from './checkpointer.js'
export type { LucidSaverOptions } from './checkpointer.js'
