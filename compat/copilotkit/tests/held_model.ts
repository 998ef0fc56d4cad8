import type { DemoOptions } from '../../../demo/server.ts'

/** The AI SDK model the demo's agent takes (`LanguageModelV3`, the demo's own `ai`). */
type Model = Extract<NonNullable<DemoOptions['model']>, { specificationVersion: 'v3' }>
type Prompt = Parameters<Model['doStream']>[0]['prompt']

/** The message the held model answers mid-text, then holds on until its run is stopped. */
export const HOLD = 'Count until I stop you'
/** What it says before it holds. */
export const PARTIAL = 'One, two, three, '
/** The message it answers at once, with {@link STILL_HERE}. */
export const FOLLOW_UP = 'Are you still there?'
export const STILL_HERE = 'Still here.'

/** A held answer: whether its `abortSignal` (the agent's, through `aiSdkAgent`) aborted. */
export interface Hold {
  aborted: boolean
}

const lastUserText = (prompt: Prompt) => {
  const content = prompt.findLast((m) => m.role === 'user')?.content
  return Array.isArray(content)
    ? content.map((p) => (p.type === 'text' ? p.text : '')).join('')
    : ''
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/**
 * The demo's model (`inner`), except for two messages: {@link HOLD} streams {@link PARTIAL} and
 * holds until its `abortSignal` aborts (then fails as a provider's aborted fetch does);
 * {@link FOLLOW_UP} answers {@link STILL_HERE}. `holds` records each held answer, `prompts` every
 * prompt the model was sent; `release()` ends every answer still held (a test's cleanup: no agent
 * is left waiting).
 */
export function heldModel(inner: Model) {
  const holds: Hold[] = []
  const prompts: Prompt[] = []
  const releases = new Set<() => void>()
  const parts = (text: string) => [
    { type: 'stream-start' as const, warnings: [] },
    { type: 'text-start' as const, id: 't' },
    ...text.split(/(?<= )/).map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
  ]
  const end = [
    { type: 'text-end' as const, id: 't' },
    { type: 'finish' as const, finishReason: { unified: 'stop' as const, raw: 'stop' }, usage },
  ]
  const model: Model = {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId: 'held',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('the demo agent streams')),
    async doStream(options) {
      prompts.push(options.prompt)
      const said = lastUserText(options.prompt)
      if (said === FOLLOW_UP) {
        return {
          stream: new ReadableStream({
            start(controller) {
              for (const part of [...parts(STILL_HERE), ...end]) controller.enqueue(part)
              controller.close()
            },
          }),
        }
      }
      if (said !== HOLD) return inner.doStream(options)
      const signal = options.abortSignal
      if (!signal) throw new Error('the held model was given no abortSignal')
      const hold: Hold = { aborted: false }
      holds.push(hold)
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts(PARTIAL)) controller.enqueue(part)
            const release = () => {
              releases.delete(release)
              signal.removeEventListener('abort', abort)
              for (const part of end) controller.enqueue(part)
              controller.close()
            }
            const abort = () => {
              hold.aborted = true
              releases.delete(release)
              controller.error(signal.reason)
            }
            releases.add(release)
            signal.addEventListener('abort', abort, { once: true })
            if (signal.aborted) abort()
          },
        }),
      }
    },
  }
  return {
    model,
    holds,
    prompts,
    release() {
      for (const release of [...releases]) release()
    },
  }
}
