import type { Attributes } from '@opentelemetry/api'
import { FRAME_KINDS } from '../../core/frames.js'
import { instruments, whenBuilt } from './instruments.js'
import { ATTRIBUTE, dbSystem, oneOf } from './names.js'

/** What a commit stored, as the sink's write path returns it (`CommitResult`). */
export interface CommittedRows {
  rows: readonly { kind: string; body: string }[]
  /** A text row grown in place: its length before (UTF-16 units) and its whole body after. */
  grown?: { from: number; body: string }
}

const KINDS: readonly string[] = [...FRAME_KINDS, 'end']

/**
 * A commit of the sink landed: its stored frames (`agent_stream.write.frames`, end markers not
 * counted) and their bytes (`agent_stream.write.size`: every row body inserted, plus the text
 * a grown row gained), by database and frame kind.
 */
export function recordCommit(dialect: string, result: CommittedRows | null) {
  const made = instruments()
  if (!made || !result) return
  const db = dbSystem(dialect)
  const base: Attributes = { [ATTRIBUTE.dbSystem]: db }
  if (result.grown) {
    const bytes = Buffer.byteLength(result.grown.body.slice(result.grown.from))
    made.bytesWritten.add(bytes, { ...base, [ATTRIBUTE.frameKind]: 'text' })
  }
  for (const row of result.rows) {
    const attributes = { ...base, [ATTRIBUTE.frameKind]: oneOf(row.kind, KINDS) }
    if (row.kind !== 'end') made.framesWritten.add(1, attributes)
    made.bytesWritten.add(Buffer.byteLength(row.body), attributes)
  }
}

/** One group-commit transaction carried `streams` streams' appends. */
export function recordGroupCommit(streams: number) {
  instruments()?.groupCommitStreams.record(streams)
}

/** What an outage buffer tells the gauge: the bytes it holds now. */
export interface HeldBytes {
  readonly heldBytes: number
}

const buffers = new Set<WeakRef<HeldBytes>>()

/**
 * Count `buffer` in `agent_stream.outage_buffer.usage` (the sum over this replica's writers) for
 * as long as it lives (held weakly: a released writer drops out when it is collected). Without
 * an SDK nothing is kept.
 */
export function watchOutageBuffer(buffer: HeldBytes) {
  if (!instruments()) return
  buffers.add(new WeakRef(buffer))
  // Collected writers leave their reference behind until the next observation: bounded here too.
  if (buffers.size % 1024 === 0) prune()
}

function prune() {
  for (const ref of buffers) if (!ref.deref()) buffers.delete(ref)
}

whenBuilt((made) =>
  made.outageBufferUsage.addCallback((result) => {
    let bytes = 0
    for (const ref of buffers) {
      const buffer = ref.deref()
      if (buffer) bytes += buffer.heldBytes
      else buffers.delete(ref)
    }
    result.observe(bytes)
  })
)
