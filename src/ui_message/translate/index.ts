/**
 * The UI message stream translator's public face: stored frames in, AI SDK `UIMessageChunk`s
 * out (pure), and the ids it mints.
 */
export { UiMessageTranslator, type UiChunk, type TurnEnd } from './translator.js'
export { approvalId, approvalSeq, reasoningPartId, textPartId } from './ids.js'
export { UiMessageBuilder } from './message.js'
