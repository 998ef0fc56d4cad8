import type { RunContext } from '../../../index.ts'
import { inputOf, sleep, starting, toolCall } from './script.ts'

/**
 * The feature suite's agents that speak state or wait for the page (see `agents.ts`): human in
 * the loop (a frontend tool), agentic generative UI (state steps), shared state (the page's
 * state in, the recipe out), predictive state updates (`PredictState` + a streamed argument).
 * The agent's state goes out as `state` event frames (a snapshot, or RFC 6902 operations), a
 * custom event as a `custom` event frame: the frame contract of issue 27.
 */

/** The agent's whole state (AG-UI `STATE_SNAPSHOT`). */
const snapshot = (ctx: RunContext, value: Record<string, unknown>) =>
  ctx.writer.write({ t: 'event', event: { kind: 'state', snapshot: value } } as any)

/** A change to the agent's state as RFC 6902 operations (AG-UI `STATE_DELTA`). */
const delta = (ctx: RunContext, operations: unknown[]) =>
  ctx.writer.write({ t: 'event', event: { kind: 'state', delta: operations } } as any)

/** The page's tool result, parsed when it is JSON. */
const resultOf = (content: string) => {
  try {
    return JSON.parse(content)
  } catch {
    return content
  }
}

/**
 * Human in the loop: ten steps as the arguments of `generate_task_steps`, the page's tool (it
 * renders them with a Confirm button); the run ends with the call open. The next run carries the
 * page's answer (`input.toolResults`) and the agent goes on with it.
 */
export const humanInTheLoop = (pauseMs: number) =>
  starting('human_in_the_loop', async (ctx) => {
    const [answer] = inputOf(ctx).toolResults ?? []
    if (answer) {
      const result = resultOf(answer.content)
      const chosen = Array.isArray(result?.steps) ? result.steps.length : 0
      await ctx.writer.write({ t: 'text', v: `Ok! I'm working on it: ${chosen} steps.` })
      return
    }
    const steps = Array.from({ length: 10 }, (_, i) => ({
      description: `Step ${i + 1}`,
      status: 'enabled',
    }))
    const pieces = [
      '{"steps":[',
      ...steps.map((s, i) => JSON.stringify(s) + (i < 9 ? ',' : '')),
      ']}',
    ]
    const id = `steps-${crypto.randomUUID()}`
    await toolCall(ctx, { id, name: 'generate_task_steps', input: { steps }, pieces, pauseMs })
  })

/** Agentic generative UI: ten pending steps as a snapshot, each completed by a delta. */
export const agenticGenerativeUi = (pauseMs: number) =>
  starting('agentic_generative_ui', async (ctx) => {
    const steps = Array.from({ length: 10 }, (_, i) => ({
      description: `Step ${i + 1}`,
      status: 'pending',
    }))
    await snapshot(ctx, { steps })
    await sleep(pauseMs, ctx.signal)
    for (let i = 0; i < steps.length && !ctx.signal.aborted; i++) {
      steps[i].status = 'completed'
      await delta(ctx, [{ op: 'replace', path: `/steps/${i}/status`, value: 'completed' }])
      await sleep(pauseMs, ctx.signal)
    }
    await snapshot(ctx, { steps })
    await ctx.writer.write({ t: 'text', v: 'All 10 steps are completed.' })
  })

/** The recipe the shared-state agent completes (the reference agent's). */
export const RECIPE = {
  title: 'Spicy chicken wraps',
  skill_level: 'Advanced',
  special_preferences: ['Low Carb', 'Spicy'],
  cooking_time: '15 min',
  ingredients: [
    { icon: '🍗', name: 'chicken breast', amount: '1' },
    { icon: '🌶️', name: 'chili powder', amount: '1 tsp' },
    { icon: '🧂', name: 'Salt', amount: 'a pinch' },
    { icon: '🥬', name: 'Lettuce leaves', amount: 'handful' },
  ],
  instructions: [
    'Season chicken with chili powder and salt.',
    'Sear until fully cooked.',
    'Slice and wrap in lettuce.',
  ],
}

/**
 * Shared state: the page's recipe (`input.state.recipe`, the page's `RunAgentInput.state`) is
 * kept, its ingredients first; the agent adds its own ingredients one delta at a time, then the
 * instructions, and says how many there are.
 */
export const sharedState = (pauseMs: number) =>
  starting('shared_state', async (ctx) => {
    const page = (inputOf(ctx).state?.recipe ?? {}) as Partial<typeof RECIPE>
    const ingredients = (page.ingredients ?? []).filter((item) => item?.name)
    const recipe = { ...RECIPE, ...page, ingredients, instructions: [] as string[] }
    await snapshot(ctx, { recipe })
    for (const item of RECIPE.ingredients) {
      if (ctx.signal.aborted) return
      if (ingredients.some((known) => known.name === item.name)) continue
      await sleep(pauseMs, ctx.signal)
      ingredients.push(item)
      await delta(ctx, [{ op: 'add', path: '/recipe/ingredients/-', value: item }])
    }
    await sleep(pauseMs, ctx.signal)
    await delta(ctx, [{ op: 'replace', path: '/recipe/instructions', value: RECIPE.instructions }])
    await ctx.writer.write({
      t: 'text',
      v: `Your recipe has ${ingredients.length} ingredients and ${RECIPE.instructions.length} steps.`,
    })
  })

/** The story the predictive agent writes (the reference agent's, with a fixed dog). */
export const STORY = 'Once upon a time, there was a dog named Rex. Rex was a very good dog.'

/**
 * Predictive state updates: a `PredictState` custom event tells the page that the `document`
 * argument of `write_document_local` is the state's `document` while it streams; that call gets
 * no result (as the reference agent's: it is the state's, not a tool anyone runs), the state its
 * final snapshot, and `confirm_changes` (the page's tool) asks the person. The next run answers
 * according to the page's answer.
 */
export const predictiveStateUpdates = (pauseMs: number) =>
  starting('predictive_state_updates', async (ctx) => {
    const [answer] = inputOf(ctx).toolResults ?? []
    if (answer) {
      const accepted = resultOf(answer.content)?.accepted === true
      await ctx.writer.write({
        t: 'text',
        v: accepted ? 'Ok! The story is saved.' : 'Ok, the changes are rejected.',
      })
      return
    }
    const value = [
      { state_key: 'document', tool: 'write_document_local', tool_argument: 'document' },
    ]
    await ctx.writer.write({
      t: 'event',
      event: { kind: 'custom', name: 'PredictState', value },
    } as any)
    const write = `write-${crypto.randomUUID()}`
    const words = STORY.split(' ')
    const pieces = [
      '{"document":"',
      ...words.map((w, i) => (i < words.length - 1 ? `${w} ` : w)),
      '"}',
    ]
    await toolCall(ctx, {
      id: write,
      name: 'write_document_local',
      input: { document: STORY },
      pieces,
      pauseMs,
    })
    // Asked "with a result": the call gets one, as a backend tool's would (CopilotKit then sends
    // it back beside the page's confirm_changes result: the door skips the server's own).
    if (/with a result/i.test(inputOf(ctx).message ?? '')) {
      await ctx.writer.write({
        t: 'event',
        event: { kind: 'tool-output', id: write, output: 'Document written.' },
      })
    }
    await snapshot(ctx, { document: STORY })
    await toolCall(ctx, {
      id: `confirm-${crypto.randomUUID()}`,
      name: 'confirm_changes',
      input: {},
    })
  })
