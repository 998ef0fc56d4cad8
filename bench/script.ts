/**
 * What the benchmark's agent writes, and the instrumentation both sides share.
 */
import { sinkInternals, type LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import type { StreamFrame } from '../src/core/frames.js'
import { now } from './baseline.js'

export interface Plan {
  /** Text tokens to write. */
  tokens: number
  /** Milliseconds between tokens (10 = 100 tokens/s). */
  intervalMs: number
  /** Write a non-text frame (an event) before every Nth token; 0 = never. */
  eventEvery: number
}

export interface ScriptWriter {
  write(frame: StreamFrame): void | Promise<void>
  end(): void | Promise<void>
}

/** A token of about four characters, like a model's. */
export const token = (i: number) => `w${(i % 997).toString(36).padStart(2, '0')} `

/**
 * Write the plan on a fixed schedule (no drift: token i is due at start + i * interval).
 * Returns, per token, the length of all text written up to and including it, and when its
 * `write()` was called.
 */
export async function play(writer: ScriptWriter, plan: Plan) {
  const calls: { textEnd: number; at: number }[] = []
  const started = performance.now()
  let text = 0
  for (let i = 0; i < plan.tokens; i++) {
    const due = started + i * plan.intervalMs
    const wait = due - performance.now()
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    if (plan.eventEvery && i > 0 && i % plan.eventEvery === 0) {
      await writer.write({ t: 'event', event: { kind: 'title', title: `t${i}` } })
    }
    const v = token(i)
    text += v.length
    calls.push({ textEnd: text, at: now() })
    await writer.write({ t: 'text', v })
  }
  await writer.end()
  return calls
}

/**
 * Record when each commit of a sink returned (epoch ms, high resolution), keyed by the cursor a
 * reader gets for it: `<seq>` for a frame, `<seq>.<length>` for text.
 */
export function instrumentCommits(sink: LucidTokenStreamSink) {
  const committedAt = new Map<string, number>()
  const { store } = sinkInternals(sink)
  const commit = store.commit.bind(store)
  store.commit = async (runId, plan) => {
    const result = await commit(runId, plan)
    if (result) {
      const at = now()
      if (result.grown) committedAt.set(`${result.grown.seq}.${result.grown.body.length}`, at)
      for (const row of result.rows) {
        committedAt.set(row.kind === 'text' ? `${row.seq}.${row.body.length}` : `${row.seq}`, at)
      }
    }
    return result
  }
  return committedAt
}

/** p-th percentile (0-100) of numbers, nearest rank. */
export function percentile(values: number[], p: number) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]
}
