import type { AgentRunner } from '../../../index.ts'
import { inputOf, sleep, starting, toolCall } from './script.ts'
import {
  agenticGenerativeUi,
  humanInTheLoop,
  predictiveStateUpdates,
  sharedState,
} from './agents_state.ts'

/**
 * The scripted agents of the feature suite, one per feature of the AG-UI dojo's
 * `server-starter-all-features` integration, each writing the frames that make that
 * integration's events through the package (docs/copilotkit.md, "The AG-UI features"). This
 * file: agentic chat, backend tool rendering, tool-based generative UI; the ones with state and
 * frontend tools are in `agents_state.ts`.
 */

export const FEATURES = [
  'agentic_chat',
  'backend_tool_rendering',
  'human_in_the_loop',
  'agentic_generative_ui',
  'tool_based_generative_ui',
  'shared_state',
  'predictive_state_updates',
] as const
export type Feature = (typeof FEATURES)[number]

/** Agentic chat: a countdown from 10 to 1 and a tick, a piece every `pauseMs`. */
export const COUNTDOWN = [
  'counting down: ',
  ...[10, 9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => `${n}  `),
  '✓',
]
const agenticChat = (pauseMs: number) =>
  starting('agentic_chat', async (ctx) => {
    for (const piece of COUNTDOWN) {
      if (ctx.signal.aborted) return
      await ctx.writer.write({ t: 'text', v: piece })
      await sleep(pauseMs, ctx.signal)
    }
  })

/**
 * Backend tool rendering: `get_weather` for the city asked about (its arguments streamed), run
 * here (a pause: the card waits for its result), then a sentence.
 */
const backendToolRendering = (pauseMs: number) =>
  starting('backend_tool_rendering', async (ctx) => {
    const message = inputOf(ctx).message ?? ''
    const city = /weather in (.+)$/i.exec(message)?.[1]?.trim() || 'San Francisco'
    const id = `weather-${crypto.randomUUID()}`
    const pieces = ['{"city":', JSON.stringify(city), '}']
    await toolCall(ctx, { id, name: 'get_weather', input: { city }, pieces, pauseMs }, 'read')
    await sleep(pauseMs * 3, ctx.signal)
    const output = {
      city,
      conditions: 'sunny',
      wind_speed: '10',
      temperature: '20',
      humidity: '60',
    }
    await ctx.writer.write({ t: 'event', event: { kind: 'tool-output', id, output } })
    await ctx.writer.write({ t: 'text', v: 'Retrieved weather information!' })
  })

/** Tool-based generative UI: a `generate_haiku` call whose arguments the page renders. */
export const HAIKU = {
  japanese: ['エーアイの', '橋つなぐ道', 'コパキット'],
  english: ["From AI's realm", 'A bridge-road linking us—', 'CopilotKit.'],
}
/** The haiku's arguments as a model streams them: a line at a time. */
const HAIKU_PIECES = [
  '{"japanese":[',
  ...HAIKU.japanese.map((line, i) => JSON.stringify(line) + (i < 2 ? ',' : '')),
  '],"english":[',
  ...HAIKU.english.map((line, i) => JSON.stringify(line) + (i < 2 ? ',' : '')),
  ']}',
]
const toolBasedGenerativeUi = (pauseMs: number) =>
  starting('tool_based_generative_ui', async (ctx) => {
    const id = `haiku-${crypto.randomUUID()}`
    await toolCall(ctx, { id, name: 'generate_haiku', input: HAIKU, pieces: HAIKU_PIECES, pauseMs })
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'tool-output', id, output: 'Haiku created' },
    })
    await ctx.writer.write({ t: 'text', v: 'Haiku created' })
  })

/** Every feature's agent (`pauseMs`: the pace of the slow ones, long enough to reload mid-run). */
export function featureAgents(pauseMs = 300): Record<Feature, AgentRunner> {
  return {
    agentic_chat: agenticChat(pauseMs),
    backend_tool_rendering: backendToolRendering(pauseMs),
    human_in_the_loop: humanInTheLoop(pauseMs / 2),
    agentic_generative_ui: agenticGenerativeUi(pauseMs),
    tool_based_generative_ui: toolBasedGenerativeUi(pauseMs),
    shared_state: sharedState(pauseMs),
    predictive_state_updates: predictiveStateUpdates(pauseMs / 2),
  }
}
