import type { ProjectionRules } from '../../core/projection.js'
import type { CheckpointSettings, DoorDeps } from '../../door/index.js'
import type { UiChunk } from '../translate/index.js'
import type { DoorReply, SentEvent } from '../../door/reply.js'

/**
 * Options of the UI message stream door: the projection's opt-ins (shared with AG-UI), a cap,
 * and the checkpoint settings every door takes.
 */
export interface UiMessageDoorOptions extends ProjectionRules, CheckpointSettings {
  /**
   * Cap on a chat request, in bytes as received: both transports refuse a larger one (413
   * `body_too_large`) before the door is asked. Default 1048576 (1 MiB).
   */
  maxBodyBytes?: number
}

/** One chunk to send, with its SSE `id:` (the frame's cursor, on a frame's last chunk). */
export type UiChunkItem = SentEvent<UiChunk>

/**
 * What the door answers, for any transport (the doors' one union, `src/door/reply.ts`): a
 * refusal before the stream opens (a 4xx with `{ code, message }`), nothing to resume (204), or
 * the turn as chunks.
 */
export type UiDoorReply = DoorReply<UiChunk>

/**
 * What every use case of the door works with: the kernel's deps (`src/door/deps.ts`) over its
 * options and its translator's state (`UiMessageTranslator.checkpoint()`, JSON).
 */
export type UiDoorDeps = DoorDeps<UiMessageDoorOptions, string>
