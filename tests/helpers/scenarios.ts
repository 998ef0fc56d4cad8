import type { AgentRunner, RunContext, RunOutcome } from '../../src/runner/contract.js'
import type { StreamFrame } from '../../src/core/frames.js'
import { scriptedAgent } from '../../src/testing/scripted_agent.js'

/** One segment of a scripted run: writes frames, says how it ended. */
type Segment = (ctx: RunContext) => Promise<RunOutcome>

/**
 * A runner that plays `segments` in order: the first at start, the next at each resume (a
 * segment that returns `parked` parks the run; its resume plays the next one).
 */
/** Two approvals in one park (each after its call's input): a resume must cover both. */
export const twoApprovals: AgentRunner = {
  async start(ctx) {
    for (const id of ['a', 'b']) {
      await ctx.writer.write({
        t: 'event',
        event: { kind: 'tool-input-available', id, name: 'act', input: {}, toolKind: 'action' },
      })
      await ctx.writer.write({ t: 'approval', runId: ctx.runId, id, toolName: 'act', input: {} })
    }
    return { status: 'parked', checkpoint: {} }
  },
  async resume() {
    return { status: 'finished' }
  },
}

export function segmentsAgent(segments: Segment[]): AgentRunner {
  const play = async (ctx: RunContext, at: number): Promise<RunOutcome> => {
    const outcome = await segments[at](ctx)
    return outcome.status === 'parked' ? { status: 'parked', checkpoint: at + 1 } : outcome
  }
  return {
    start: (ctx) => play(ctx, 0),
    resume: (ctx) => play({ ...ctx, runId: ctx.streamRunId }, ctx.checkpoint as number),
  }
}

const event = (e: Record<string, unknown>): StreamFrame => ({ t: 'event', event: e }) as StreamFrame

async function write(ctx: RunContext, ...frames: StreamFrame[]) {
  for (const frame of frames) await ctx.writer.write(frame)
}

/** Every kind of frame the door translates, in three segments (an approval, a question set). */
const everything = segmentsAgent([
  async (ctx) => {
    const id = (n: string) => `${ctx.runId}.${n}`
    await write(
      ctx,
      event({ kind: 'step-start' }),
      event({ kind: 'reasoning', text: 'Thinking it over.' }),
      { t: 'text', v: 'Hello ' }
    )
    await ctx.writer.flush?.()
    await write(
      ctx,
      { t: 'text', v: 'world. ' },
      // A call without streamed arguments: START, ARGS and END from one frame.
      event({
        kind: 'tool-input-available',
        id: id('a'),
        name: 'lookup',
        input: { x: 1 },
        toolKind: 'read',
      }),
      event({ kind: 'tool-output', id: id('a'), output: { ok: true } }),
      // A call with streamed arguments.
      event({ kind: 'tool-input-start', id: id('b'), name: 'search', toolKind: 'read' }),
      event({ kind: 'tool-input-delta', id: id('b'), delta: '{"q":' }),
      event({ kind: 'tool-input-delta', id: id('b'), delta: '"weekly"}' }),
      event({
        kind: 'tool-input-available',
        id: id('b'),
        name: 'search',
        input: { q: 'weekly' },
        toolKind: 'read',
      }),
      event({ kind: 'tool-output-error', id: id('b'), error: 'boom' }),
      { t: 'component', name: 'card', id: 'card', data: { n: 1 } },
      { t: 'text', v: 'Between. ' },
      // Replaces the first card: a replay no longer has that one.
      { t: 'component', name: 'card', id: 'card', data: { n: 2 } },
      event({ kind: 'ui', id: 'chart', component: 'chart', props: { bars: 3 } }),
      event({ kind: 'title', title: 'Weekly' }),
      { t: 'text', v: 'Let me send it. ' },
      event({ kind: 'step-finish', usage: { tokens: 3 } }),
      event({
        kind: 'tool-input-available',
        id: id('d'),
        name: 'send_email',
        input: { to: 'team' },
        toolKind: 'action',
      }),
      {
        t: 'approval',
        runId: ctx.runId,
        id: id('d'),
        toolName: 'send_email',
        input: { to: 'team' },
        confirmation: { title: 'Send it?' },
        approver: 'requester',
      } as StreamFrame
    )
    return { status: 'parked', checkpoint: null }
  },
  async (ctx) => {
    await write(
      ctx,
      event({ kind: 'tool-output', id: `${ctx.runId}.d`, output: { sent: true } }),
      { t: 'text', v: 'Sent. ' },
      {
        t: 'elicitation',
        runId: ctx.runId,
        id: `${ctx.runId}.q`,
        request: {
          id: `${ctx.runId}.q`,
          source: 'ask',
          preamble: 'One question.',
          questions: [
            {
              id: 'format',
              prompt: 'Which format?',
              options: [
                { value: 'pdf', label: 'PDF' },
                { value: 'csv', label: 'CSV' },
              ],
            },
          ],
        },
      } as StreamFrame
    )
    return { status: 'parked', checkpoint: null }
  },
  async (ctx) => {
    await write(ctx, { t: 'text', v: 'Thanks. ' })
    const child = ctx.child(`${ctx.runId}.helper`, { name: 'helper' })
    await write(
      child,
      event({ kind: 'step-start' }),
      { t: 'text', v: 'Child here. ' },
      event({
        kind: 'tool-input-available',
        id: `${child.runId}.e`,
        name: 'lookup',
        input: {},
        toolKind: 'read',
      }),
      event({ kind: 'tool-output', id: `${child.runId}.e`, output: 1 }),
      event({ kind: 'step-finish' })
    )
    await child.finish()
    await write(ctx, { t: 'text', v: 'All done.' })
    return { status: 'finished' }
  },
])

/** Fails with a call and a sub-agent open. */
const failing = segmentsAgent([
  async (ctx) => {
    await write(
      ctx,
      { t: 'text', v: 'Working. ' },
      event({ kind: 'tool-input-start', id: `${ctx.runId}.f`, name: 'calc', toolKind: 'read' }),
      event({ kind: 'tool-input-delta', id: `${ctx.runId}.f`, delta: '{"a":' })
    )
    const child = ctx.child(`${ctx.runId}.sub`, { name: 'sub' })
    await write(child, { t: 'text', v: 'Sub text. ' })
    throw new Error('secret failure')
  },
])

/** Cancelled with text, a sub-agent's step and a call open. */
const cancelled = segmentsAgent([
  async (ctx) => {
    await write(ctx, { t: 'text', v: 'Starting. ' })
    const child = ctx.child(`${ctx.runId}.sub`, { name: 'sub' })
    await write(
      child,
      event({ kind: 'step-start' }),
      { t: 'text', v: 'Sub text. ' },
      event({ kind: 'tool-input-start', id: `${child.runId}.g`, name: 'calc', toolKind: 'read' })
    )
    return { status: 'cancelled' }
  },
])

/**
 * The agent's state (`state` frames) through two segments: a snapshot, deltas between text, a
 * step and a tool call, a park; after the resume (a new writer, which rebuilds the state from the
 * stored rows) more deltas, then a second snapshot and a delta on it.
 */
const sharedState = segmentsAgent([
  async (ctx) => {
    const id = (n: string) => `${ctx.runId}.${n}`
    await write(
      ctx,
      event({ kind: 'state', snapshot: { recipe: { title: 'Soup', steps: [] }, servings: 2 } }),
      { t: 'text', v: 'Planning. ' },
      event({ kind: 'state', delta: [{ op: 'add', path: '/recipe/steps/-', value: 'chop' }] }),
      event({ kind: 'step-start' }),
      event({
        kind: 'state',
        delta: [
          { op: 'test', path: '/servings', value: 2 },
          { op: 'replace', path: '/servings', value: 4 },
        ],
      }),
      event({
        kind: 'tool-input-available',
        id: id('c'),
        name: 'cook',
        input: { minutes: 20 },
        toolKind: 'action',
      }),
      {
        t: 'approval',
        runId: ctx.runId,
        id: id('c'),
        toolName: 'cook',
        input: { minutes: 20 },
        approver: 'requester',
      } as StreamFrame
    )
    return { status: 'parked', checkpoint: null }
  },
  async (ctx) => {
    await write(
      ctx,
      event({ kind: 'tool-output', id: `${ctx.runId}.c`, output: { done: true } }),
      event({ kind: 'state', delta: [{ op: 'add', path: '/recipe/steps/-', value: 'simmer' }] }),
      { t: 'text', v: 'Cooking. ' },
      event({ kind: 'step-finish' }),
      event({ kind: 'state', delta: [{ op: 'remove', path: '/recipe/steps/0' }] }),
      event({ kind: 'state', snapshot: { done: true, notes: ['ok'] } }),
      event({ kind: 'state', delta: [{ op: 'add', path: '/notes/1', value: 'served' }] }),
      { t: 'text', v: 'Done.' }
    )
    return { status: 'finished' }
  },
])

/**
 * The stored-run scenarios of the re-attach tests: each runner and the answers its parks get
 * (`approve` an approval, `answer` a question set), in order.
 */
export const SCENARIOS = {
  everything: { runner: everything, answers: ['approve', 'answer'] },
  failing: { runner: failing, answers: [] },
  cancelled: { runner: cancelled, answers: [] },
  sharedState: { runner: sharedState, answers: ['approve'] },
  // A grandchild parks with steps and two sub-agents open; the resume re-opens them.
  nested: {
    runner: scriptedAgent({ steps: ['reasoning', 'child'], childDepth: 2 }),
    answers: ['approve'],
  },
} satisfies Record<string, { runner: AgentRunner; answers: ('approve' | 'answer')[] }>
