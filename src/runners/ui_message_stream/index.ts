/**
 * `adonis-agent-stream/ui-message-stream`: any producer of the AI SDK's UI message stream
 * (`streamText(...).toUIMessageStream()`, Mastra's `toAISdkStream` with version v6 or v7, the
 * OpenAI Agents extensions' AI SDK UI stream) as this package's runner
 * (docs/runners/ui_message_stream.md).
 * Kept off the package root so the root never loads `ai`.
 */
export { uiMessageStreamAgent } from './agent.js'
export type {
  UiMessageStreamAgentOptions,
  UiMessageStreamArgs,
  UiMessageStreamSource,
} from './agent.js'
export type { ApprovalOptions } from './chunks.js'
export type { UiMessageStreamCheckpoint } from './checkpoint.js'
