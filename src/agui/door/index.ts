/**
 * The AG-UI door's public face: the door (protocol logic, no HTTP), its replies and options,
 * and its run rows.
 */
export { AgUiDoor } from './door.js'
export { DoorRunStore, type DoorRun } from '../../store/door_runs.js'
export type { AgUiDoorOptions, AgUiReply, SseItem } from './reply.js'
export type { AgUiRefusalCode } from './refusals.js'
