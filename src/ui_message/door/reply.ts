import type { LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import type { RunDriver } from '../../runner/driver.js'
import type { Parking } from '../../parking/parking.js'
import type { AgUiRunStore } from '../../store/door_runs.js'
import type { ProjectionRules } from '../../core/projection.js'
import type { TranslatorCheckpoints } from '../../checkpoints/index.js'
import type { UiChunk } from '../translate/index.js'
import type { DoorReply, SentEvent } from '../../door/reply.js'

/** Options of the UI message stream door: the projection's opt-ins (shared with AG-UI) and a cap. */
export interface UiMessageDoorOptions extends ProjectionRules {
  /** Cap on a chat request, in bytes. Default 1048576 (1 MiB). */
  maxBodyBytes?: number
  /**
   * Keep the translator's state every this many rows of a turn this replica translates, so a
   * resume at a cursor translates only what follows the nearest checkpoint. Default
   * `DEFAULTS.checkpointEvery` (64).
   */
  checkpointEvery?: number
  /**
   * Also store a checkpoint in the database (the `checkpoints` table) each time the kept ones
   * cross a multiple of this many rows, so a replica that never served a stream re-attaches
   * near too. 0: never. Default `DEFAULTS.storedCheckpointEvery` (1024).
   */
  storedCheckpointEvery?: number
}

/** One chunk to send, with its SSE `id:` (the frame's cursor, on a frame's last chunk). */
export type UiChunkItem = SentEvent<UiChunk>

/**
 * What the door answers, for any transport (the doors' one union, `src/door/reply.ts`): a
 * refusal before the stream opens (a 4xx with `{ code, message }`), nothing to resume (204), or
 * the turn as chunks.
 */
export type UiDoorReply = DoorReply<UiChunk>

/** What every use case of the door works with. */
export interface UiDoorDeps {
  sink: LucidTokenStreamSink
  driver: RunDriver
  parking: Parking
  runs: AgUiRunStore
  options: UiMessageDoorOptions
  /**
   * This replica's translator checkpoints (`UiMessageTranslator.checkpoint()`): a resume at a
   * cursor replays only what follows the nearest.
   */
  checkpoints?: TranslatorCheckpoints<string>
}
