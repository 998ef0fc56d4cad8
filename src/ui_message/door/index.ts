/** The UI message stream door's public face: the door (protocol logic, no HTTP), its replies. */
export { UiMessageDoor } from './door.js'
export type { UiChunkItem, UiDoorReply, UiMessageDoorOptions } from './reply.js'
export { CHAT_LIMITS } from './input.js'
