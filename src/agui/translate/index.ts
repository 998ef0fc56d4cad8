/**
 * The AG-UI translator's public face: stored frames in, typed AG-UI 1.0 events out (pure), and
 * the reply schemas its interrupts advertise.
 */
export { FrameTranslator, type TranslatorCheckpoint } from './translator.js'
export { preludeAfter } from './prelude.js'
export { RUN_STATE_EVENT } from './agent_state.js'
export type {
  AgentStreamState,
  AgUiEvent,
  AgUiEventRecord,
  AgUiInterrupt,
  AgUiOutcome,
  TranslatorOptions,
} from './types.js'
export { APPROVAL_RESPONSE_SCHEMA, questionSetSchema, type ApprovalReply } from './schemas.js'
