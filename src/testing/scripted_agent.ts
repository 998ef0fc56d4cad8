import type { AgentRunner, ResumeContext, RunContext, RunOutcome } from '../runner/contract.js'
import type { StreamFrame } from '../core/frames.js'

/** Options of {@link scriptedAgent}. */
export interface ScriptedAgentOptions {
  /** Tokens per second of streamed text; 0 = as fast as possible. Default 0. */
  tokensPerSecond?: number
  /** What the run does, in order. Default: all of them. */
  steps?: ('reasoning' | 'read' | 'approval' | 'question' | 'child')[]
  /** How deep the delegation goes: 1 = a child parks, 2 = a grandchild parks. Default 1. */
  childDepth?: number
  /** Who may decide the approval (`'requester'` or a role). Default `'requester'`. */
  approver?: string
  /** The approval lapses this long after it is asked, in milliseconds. Default: never. */
  expiresInMs?: number
  /** Throw (a secret-looking message) at this step instead of doing it. */
  failAt?: 'start' | 'resume'
  /** Called at every resume (tests count them). */
  onResume?: (ctx: ResumeContext) => void
}

interface Checkpoint {
  /** Index of the step that parked. */
  at: number
  /** The delegation path down to the run that parked (empty: the top run). */
  path: string[]
}

const words = (text: string) => text.split(/(?<= )/)

/**
 * A small deterministic agent for tests and the demo: streams text at a token rate, reasons,
 * calls a read tool, asks approval for an action tool, asks a question set, and delegates to a
 * child (and grandchild) that parks itself. Every id is derived from the run id, so a scenario
 * writes the same frames every time.
 */
export function scriptedAgent(options: ScriptedAgentOptions = {}): AgentRunner {
  const steps = options.steps ?? ['reasoning', 'read', 'approval', 'question', 'child']
  const depth = options.childDepth ?? 1
  const delay = options.tokensPerSecond ? 1000 / options.tokensPerSecond : 0

  async function say(ctx: RunContext, text: string) {
    for (const token of words(text)) {
      await ctx.writer.write({ t: 'text', v: token })
      if (delay) await new Promise((resolve) => setTimeout(resolve, delay))
    }
  }

  function approvalFrame(ctx: RunContext, callId: string): StreamFrame {
    return {
      t: 'approval',
      runId: ctx.runId,
      id: callId,
      toolName: 'send_email',
      input: { to: 'team@example.com', subject: 'Weekly report' },
      confirmation: { title: 'Send the weekly report?', description: 'Emails the team.' },
      approver: options.approver ?? 'requester',
      ...(options.expiresInMs
        ? { expiresAt: new Date(Date.now() + options.expiresInMs).toISOString() }
        : {}),
    }
  }

  /** Run steps from `from`; returns the outcome (parked with where it stopped). */
  async function run(ctx: RunContext, from: number): Promise<RunOutcome> {
    for (let at = from; at < steps.length; at++) {
      const step = steps[at]
      const callId = `${ctx.runId}.call${at}`
      await ctx.writer.write({ t: 'event', event: { kind: 'step-start' } })
      if (step === 'reasoning') {
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'reasoning', text: 'The user wants the weekly numbers.' },
        })
        await say(ctx, 'Let me look at this week. ')
      } else if (step === 'read') {
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'tool-input-start', id: callId, name: 'search', toolKind: 'read' },
        })
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: callId,
            name: 'search',
            input: { q: 'weekly numbers' },
            toolKind: 'read',
          },
        })
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'tool-output', id: callId, output: { revenue: 42 } },
        })
        await say(ctx, 'Revenue was 42. ')
      } else if (step === 'approval') {
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: callId,
            name: 'send_email',
            input: { to: 'team@example.com' },
            toolKind: 'action',
          },
        })
        await ctx.writer.write(approvalFrame(ctx, callId))
        return { status: 'parked', checkpoint: { at, path: [] } satisfies Checkpoint }
      } else if (step === 'question') {
        await ctx.writer.write({
          t: 'elicitation',
          runId: ctx.runId,
          id: callId,
          request: {
            id: callId,
            source: 'ask',
            preamble: 'Two quick questions.',
            questions: [
              {
                id: 'format',
                prompt: 'Which format?',
                options: [
                  { value: 'pdf', label: 'PDF' },
                  { value: 'csv', label: 'CSV' },
                ],
                defaults: ['pdf'],
              },
              { id: 'note', prompt: 'Anything to add?', options: [], allowFreeText: true },
            ],
          },
        })
        return { status: 'parked', checkpoint: { at, path: [] } satisfies Checkpoint }
      } else if (step === 'child') {
        // Delegate down `depth` levels; the deepest run asks for approval and parks itself.
        let child = ctx
        const path: string[] = []
        for (let level = 1; level <= depth; level++) {
          child = child.child(`${child.runId}.sub${level}`, { name: `helper-${level}` })
          path.push(child.runId)
          await child.writer.write({ t: 'event', event: { kind: 'step-start' } })
          await say(child, `Sub-agent ${level} here. `)
        }
        await child.writer.write(approvalFrame(child, `${child.runId}.call`))
        await child.writer.end()
        return { status: 'parked', checkpoint: { at, path } satisfies Checkpoint }
      }
      await ctx.writer.write({ t: 'event', event: { kind: 'step-finish' } })
    }
    await say(ctx, 'All done.')
    return { status: 'finished' }
  }

  return {
    async start(ctx) {
      if (options.failAt === 'start')
        throw new Error('secret: connection string postgres://user:pw@db')
      return run(ctx, 0)
    },
    async resume(ctx) {
      options.onResume?.(ctx)
      if (options.failAt === 'resume') throw new Error('secret: api key sk-live-123')
      const checkpoint = ctx.checkpoint as Checkpoint
      const [item] = ctx.items
      if (steps[checkpoint.at] === 'approval' || steps[checkpoint.at] === 'child') {
        // `ctx.runId` is the run that parked (the deepest child after a delegation).
        if (item.status === 'approved') {
          await ctx.writer.write({
            t: 'event',
            event: { kind: 'tool-output', id: item.id, output: { sent: true, input: item.input } },
          })
          await say(ctx, 'Sent. ')
        } else {
          await say(ctx, `Not sent (${item.status}). `)
        }
        // Back up the delegation path: each parent continues where it delegated.
        for (const runId of [...checkpoint.path].reverse()) {
          await ctx.writer.write({ t: 'event', event: { kind: 'step-finish' } })
          await ctx.writer.write({ t: 'event', event: { kind: 'subagent-finish', runId } })
          await say(ctx, `Back from ${runId}. `)
        }
      } else if (steps[checkpoint.at] === 'question') {
        await say(
          ctx,
          item.skipped
            ? 'Skipped: using defaults. '
            : `Format: ${(item.answers?.format ?? []).join(',')}. `
        )
      }
      await ctx.writer.write({ t: 'event', event: { kind: 'step-finish' } })
      const top: RunContext = { ...ctx, runId: ctx.streamRunId }
      return run(top, checkpoint.at + 1)
    },
  }
}
