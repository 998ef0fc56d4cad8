/**
 * The AG-UI door's public face: the door (protocol logic, no HTTP), its replies and options.
 */
export { AgUiDoor } from './door.js'
export type { AgUiDoorOptions, AgUiReply, SseItem } from './reply.js'
export type { AgUiRefusalCode } from './refusals.js'
