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

/** A runner that only ever starts (these agents never park). */
export const starting = (name: string, start: (ctx: RunContext) => Promise<void>): AgentRunner => ({
  name,
  async start(ctx): Promise<RunOutcome> {
    await start(ctx)
    return ctx.signal.aborted ? { status: 'cancelled' } : { status: 'finished' }
  },
  async resume(): Promise<RunOutcome> {
    return { status: 'failed' }
  },
})

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
  for (const delta of call.pieces ?? [JSON.stringify(call.input)]) {
    await writer.write({ t: 'event', event: { kind: 'tool-input-delta', id: call.id, delta } })
    if (call.pauseMs) await sleep(call.pauseMs, ctx.signal)
  }
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
