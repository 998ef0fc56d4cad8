import type { AgentRunner, RunContext } from '../../src/runner/contract.js'

/** The texts of the thread's earlier turns, in order: what the person said and the answers. */
async function earlierTexts(ctx: RunContext) {
  const texts: string[] = []
  for await (const frame of ctx.conversation()) {
    if (frame.t === 'text') texts.push(frame.v)
    if (frame.t === 'event' && (frame.event as any).kind === 'user-message') {
      texts.push(...(frame.event as any).parts.map((part: any) => part.text))
    }
  }
  return texts
}

/**
 * A runner whose runs say `answer to <message>` and, for a message starting with `hold`, then
 * wait until the test releases them (or their signal aborts): a thread that stays busy as long
 * as a test needs. It records each start and end in order, and how many of its runs ran at once
 * (across every runtime that shares it: the replicas of a test live in one process), and
 * which waits its signal ended (`aborted`). With `after`, a run released says it after its
 * first words (an answer cut mid-text while held). With `conversation`, each run first reads the
 * thread's earlier turns (`ctx.conversation()`) and records their texts in `seen`.
 */
export function heldRunner(options: { conversation?: boolean; after?: string } = {}) {
  const log: string[] = []
  const aborted: string[] = []
  const seen: Record<string, string[]> = {}
  const released = new Set<string>()
  let releasedAll = false
  const gates = new Map<string, () => void>()
  const starts = new Map<string, { promise: Promise<void>; resolve: () => void }>()
  let active = 0
  let maxActive = 0
  const startOf = (message: string) => {
    let entry = starts.get(message)
    if (!entry) {
      let resolve!: () => void
      const promise = new Promise<void>((r) => (resolve = r))
      entry = { promise, resolve }
      starts.set(message, entry)
    }
    return entry
  }
  const runner: AgentRunner = {
    async start(ctx) {
      const message = String((ctx.input as { message?: unknown }).message)
      active++
      maxActive = Math.max(maxActive, active)
      log.push(`start:${message}`)
      try {
        if (options.conversation) seen[message] = await earlierTexts(ctx)
        await ctx.writer.write({ t: 'text', v: `answer to ${message}` })
        await ctx.writer.flush?.()
        startOf(message).resolve()
        if (message.startsWith('hold') && !released.has(message) && !releasedAll) {
          await new Promise<void>((resolve) => {
            gates.set(message, resolve)
            ctx.signal.addEventListener('abort', () => resolve(), { once: true })
          })
          if (ctx.signal.aborted) aborted.push(message)
          else if (options.after) await ctx.writer.write({ t: 'text', v: options.after })
        }
      } finally {
        active--
        log.push(`end:${message}`)
      }
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
  return {
    runner,
    log,
    aborted,
    seen,
    /** Resolves once the run of `message` wrote its text. */
    started: (message: string) => startOf(message).promise,
    /** Let the run of `message` finish (now, or as soon as it gets to its wait). */
    release(message: string) {
      released.add(message)
      gates.get(message)?.()
    },
    /** Let every run finish, held now or later: for a test's cleanup. */
    releaseAll() {
      releasedAll = true
      for (const open of gates.values()) open()
    },
    get maxActive() {
      return maxActive
    },
  }
}

/** Says `Hello`, then talks until its signal aborts (a stop's target): it finishes then. */
export const talkerUntilStopped: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({ t: 'text', v: 'Hello' })
    await ctx.writer.flush?.()
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))
    return { status: 'finished' }
  },
  resume: async () => ({ status: 'finished' }),
}
