import type { ProjectionRules } from '../../core/projection.js'
import type { CheckpointSettings, DoorDeps, MultitaskStrategy } from '../../door/index.js'
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
  /**
   * A new message on a chat whose turn is streaming ("double texting", LangGraph's
   * `multitask_strategy`): `'enqueue'` (it waits in the chat's queue and its turn starts when
   * the current one ends), `'reject'` (409 `thread_busy` with the turn's `runId`, nothing
   * written), `'interrupt'` / `'rollback'` (the turn is stopped, kept or removed, then the
   * message starts). A request may ask for another with a `multitaskStrategy` field in its body
   * (`DefaultChatTransport({ body })`). A chat waiting for a decision keeps its rule
   * (`interrupt_pending`) unless `interrupt` or `rollback` is asked. Default `'enqueue'`.
   */
  multitaskStrategy?: MultitaskStrategy
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
