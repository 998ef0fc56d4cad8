/**
 * The polling baseline: the incumbent's documented algorithm (peers.md), on this package's own
 * tables so both sides pay the same SQL.
 *
 * - Writer: text is gathered from its first token for `flushMs` (50 ms) and stored as a NEW row;
 *   any other frame flushes first; seq = MAX(seq) + 1 taken inside the insert's transaction.
 * - Reader: polls `seq > last order by seq limit 500` every 250 ms (1 s after 5 s of silence).
 */
import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { StreamFrame } from '../src/core/frames.js'

const FRAMES = 'agent_stream_frames'
export const now = () => performance.timeOrigin + performance.now()

export class BaselineWriter {
  #held = ''
  #timer: NodeJS.Timeout | null = null
  #chain: Promise<unknown> = Promise.resolve()
  /** Commit time (epoch ms, high resolution) of each row, by seq. */
  committedAt = new Map<number, number>()

  constructor(
    readonly client: QueryClientContract,
    readonly runId: string,
    readonly flushMs = 50
  ) {}

  write(frame: StreamFrame): Promise<void> {
    if (frame.t === 'text') {
      this.#held += frame.v
      this.#timer ??= setTimeout(() => void this.#enqueue(() => this.#flush()), this.flushMs)
      return Promise.resolve()
    }
    return this.#enqueue(async () => {
      await this.#flush()
      await this.#insert('event', JSON.stringify(frame))
    })
  }

  end() {
    return this.#enqueue(async () => {
      await this.#flush()
      await this.#insert('end', '')
    })
  }

  #enqueue(work: () => Promise<void>) {
    const next = this.#chain.then(work)
    this.#chain = next.catch(() => {})
    return next
  }

  async #flush() {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    if (!this.#held) return
    const text = this.#held
    this.#held = ''
    await this.#insert('text', text)
  }

  async #insert(kind: string, body: string) {
    const trx = await this.client.transaction()
    try {
      const row = await trx.from(FRAMES).where('run_id', this.runId).max('seq as seq').first()
      const seq = Number(row?.seq ?? 0) + 1
      await trx.insertQuery().table(FRAMES).insert({
        run_id: this.runId,
        seq,
        kind,
        body,
        component_id: null,
        superseded: false,
        created_at: Date.now(),
      })
      await trx.commit()
      this.committedAt.set(seq, now())
    } catch (error) {
      await trx.rollback()
      throw error
    }
  }
}

/** One polling reader. Calls `onRow` for each row; stops at the end marker or `stop()`. */
export function baselineReader(
  client: QueryClientContract,
  runId: string,
  onRow: (row: { seq: number; kind: string; body: string }, at: number) => void,
  pollMs = 250
) {
  let last = 0
  let stopped = false
  let quietSince = Date.now()
  let timer: NodeJS.Timeout | null = null
  const done = new Promise<void>((resolve) => {
    const tick = async () => {
      if (stopped) return resolve()
      const rows = await client
        .from(FRAMES)
        .where('run_id', runId)
        .where('seq', '>', last)
        .orderBy('seq', 'asc')
        .limit(500)
      const at = now()
      for (const row of rows) {
        last = Number(row.seq)
        if (row.kind === 'end') {
          stopped = true
          return resolve()
        }
        onRow({ seq: last, kind: row.kind, body: row.body }, at)
      }
      if (rows.length) quietSince = Date.now()
      const wait = Date.now() - quietSince > 5000 ? 1000 : pollMs
      timer = setTimeout(() => void tick(), wait)
    }
    void tick()
  })
  return {
    done,
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}
