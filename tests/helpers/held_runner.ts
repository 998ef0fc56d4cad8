import type { AgentRunner } from '../../src/runner/contract.js'

/**
 * A runner whose runs say `answer to <message>` and, for a message starting with `hold`, then
 * wait until the test releases them (or their signal aborts): a thread that stays busy as long
 * as a test needs. It records each start and end in order, and how many of its runs ran at once
 * (across every runtime that shares it: the replicas of a test live in one process).
 */
export function heldRunner() {
  const log: string[] = []
  const released = new Set<string>()
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
        await ctx.writer.write({ t: 'text', v: `answer to ${message}` })
        await ctx.writer.flush?.()
        startOf(message).resolve()
        if (message.startsWith('hold') && !released.has(message)) {
          await new Promise<void>((resolve) => {
            gates.set(message, resolve)
            ctx.signal.addEventListener('abort', () => resolve(), { once: true })
          })
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
    /** Resolves once the run of `message` wrote its text. */
    started: (message: string) => startOf(message).promise,
    /** Let the run of `message` finish (now, or as soon as it gets to its wait). */
    release(message: string) {
      released.add(message)
      gates.get(message)?.()
    },
    get maxActive() {
      return maxActive
    },
  }
}
