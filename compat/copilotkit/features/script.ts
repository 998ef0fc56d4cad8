import type { AgentRunner, RunContext, RunOutcome } from '../../../index.ts'

/** What the feature suite's scripted agents are made of: their input, pauses, tool calls. */

/** What the doors give a runner as `ctx.input` (docs/agents.md), as far as these agents read it. */
export interface FeatureInput {
  message?: string | null
  state?: Record<string, any>
  tools?: { name: string }[]
  toolResults?: { id: string; name: string; content: string }[]
}

export const inputOf = (ctx: RunContext) => (ctx.input ?? {}) as FeatureInput

/** Wait `ms`, or less when the run is cancelled. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })

/** The agents running now, by name, how many runs each (the re-attach tests check it). */
export const running = new Map<string, number>()

/** A runner that only ever starts (these agents never park). */
export const starting = (name: string, start: (ctx: RunContext) => Promise<void>): AgentRunner => ({
  name,
  async start(ctx): Promise<RunOutcome> {
    running.set(name, (running.get(name) ?? 0) + 1)
    try {
      await start(ctx)
    } finally {
      running.set(name, running.get(name)! - 1)
    }
    return ctx.signal.aborted ? { status: 'cancelled' } : { status: 'finished' }
  },
  async resume(): Promise<RunOutcome> {
    return { status: 'failed' }
  },
})

/**
 * The tool calls whose input is streaming now: name -> pieces written (the re-attach tests
 * reload mid-call by it when the page shows nothing of the call yet).
 */
export const streaming = new Map<string, number>()

/** A tool call whose input the model would stream: start, the input's JSON in pieces, the input. */
export async function toolCall(
  ctx: RunContext,
  call: { id: string; name: string; input: unknown; pieces?: string[]; pauseMs?: number },
  toolKind: 'read' | 'action' = 'action'
) {
  const { writer } = ctx
  await writer.write({
    t: 'event',
    event: { kind: 'tool-input-start', id: call.id, name: call.name, toolKind },
  })
  const pieces = call.pieces ?? [JSON.stringify(call.input)]
  for (const [i, delta] of pieces.entries()) {
    await writer.write({ t: 'event', event: { kind: 'tool-input-delta', id: call.id, delta } })
    streaming.set(call.name, i + 1)
    if (call.pauseMs) await sleep(call.pauseMs, ctx.signal)
  }
  streaming.delete(call.name)
  await writer.write({
    t: 'event',
    event: {
      kind: 'tool-input-available',
      id: call.id,
      name: call.name,
      input: call.input,
      toolKind,
    },
  })
}
