import type { RawReply } from '../answer.js'
import type { DurableTx } from '../../store/durable_store.js'
import { baseHeaders, dsRefusal, H } from '../read/headers.js'
import { formatOffset } from '../protocol/offset.js'
import { wholeNumber } from './rules.js'

/** An idempotent producer's headers (PROTOCOL.md 5.2.1). */
export interface Producer {
  id: string
  epoch: number
  seq: number
}

/** The producer headers: all three or none (400), a non-empty id, whole numbers (400). */
export function readProducer(
  headers: Record<string, string | undefined>
): Producer | RawReply | null {
  const id = headers['producer-id']
  const epoch = headers['producer-epoch']
  const seq = headers['producer-seq']
  if (id === undefined && epoch === undefined && seq === undefined) return null
  if (id === undefined || epoch === undefined || seq === undefined)
    return dsRefusal(
      400,
      'invalid_producer',
      'Give Producer-Id, Producer-Epoch and Producer-Seq together.'
    )
  if (id === '') return dsRefusal(400, 'invalid_producer', 'Producer-Id is empty.')
  const epochNumber = wholeNumber(epoch, false)
  const seqNumber = wholeNumber(seq, false)
  if (epochNumber === null || seqNumber === null)
    return dsRefusal(400, 'invalid_producer', 'Producer-Epoch and Producer-Seq are whole numbers.')
  return { id, epoch: epochNumber, seq: seqNumber }
}

/**
 * A producer's append against its state (Kafka-style): `accepted`, or the answer: 204 for a
 * duplicate (already written: nothing again), 403 + `Producer-Epoch` for a stale epoch, 400 for
 * a new epoch not starting at 0, 409 + `Producer-Expected-Seq`/`-Received-Seq` for a gap.
 */
export async function checkProducer(
  tx: DurableTx,
  runId: string,
  producer: Producer
): Promise<'accepted' | RawReply> {
  const state = await tx.producer(runId, producer.id)
  const gap = (expected: number) =>
    dsRefusal(409, 'producer_sequence_gap', 'The producer skipped a sequence number.', {
      [H.producerExpectedSeq]: String(expected),
      [H.producerReceivedSeq]: String(producer.seq),
    })
  if (!state) return producer.seq === 0 ? 'accepted' : gap(0)
  if (producer.epoch < state.epoch)
    return dsRefusal(403, 'stale_producer_epoch', 'A newer epoch of this producer wrote.', {
      [H.producerEpoch]: String(state.epoch),
    })
  if (producer.epoch > state.epoch)
    return producer.seq === 0
      ? 'accepted'
      : dsRefusal(400, 'invalid_producer', 'A new epoch starts at sequence 0.')
  if (producer.seq <= state.lastSeq) {
    const head = await tx.lock(runId)
    return {
      kind: 'raw',
      status: 204,
      headers: {
        ...baseHeaders(),
        [H.producerEpoch]: String(producer.epoch),
        [H.producerSeq]: String(state.lastSeq),
        ...(head ? { [H.nextOffset]: formatOffset({ seq: head.lastSeq }) } : {}),
      },
    }
  }
  return producer.seq === state.lastSeq + 1 ? 'accepted' : gap(state.lastSeq + 1)
}
