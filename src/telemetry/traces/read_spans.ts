import { context, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api'
import { tracer } from '../otel.js'
import { ATTR, errorType } from './attributes.js'

/** What a door serves a reader from: the stream, the cursor it starts after, and how. */
export interface TracedRead {
  streamRunId: string
  /** The cursor the read starts after, as the wire writes it (`"0"`: from the start). */
  cursor: string
  /** Stored, then followed live (a re-attach), or read up to a known end (a replay). */
  live: boolean
}

/**
 * The span of one read a door serves (a span of the request that served it, the active
 * context): `agent_stream.reattach` (stored rows, then live) or `agent_stream.replay` (stored
 * rows up to a known end), with `agent_stream.cursor` and, at its end, `agent_stream.rows_read`.
 */
export class ReadSpan {
  readonly #span: Span
  #rows = 0

  constructor(read: TracedRead) {
    this.#span = tracer().startSpan(
      read.live ? 'agent_stream.reattach' : 'agent_stream.replay',
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [ATTR.streamRunId]: read.streamRunId,
          [ATTR.cursor]: read.cursor,
          [ATTR.live]: read.live,
        },
      },
      context.active()
    )
  }

  /** One item read. */
  row() {
    this.#rows++
  }

  /** The read failed (its stable code as `error.type`). */
  fail(error: unknown) {
    this.#span.setAttribute(ATTR.errorType, errorType(error))
    this.#span.setStatus({ code: SpanStatusCode.ERROR })
  }

  /** The read ended (done, or the reader left). */
  end() {
    this.#span.setAttribute(ATTR.rowsRead, this.#rows)
    this.#span.end()
  }
}

/**
 * `items` read under a {@link ReadSpan} (made at the first item asked for, in the context
 * active then; ended when the reading ends, however it ends), each item counted.
 */
export async function* tracedItems<T>(
  items: AsyncIterable<T>,
  read: TracedRead
): AsyncGenerator<T> {
  const span = new ReadSpan(read)
  try {
    for await (const item of items) {
      span.row()
      yield item
    }
  } catch (error) {
    span.fail(error)
    throw error
  } finally {
    span.end()
  }
}
