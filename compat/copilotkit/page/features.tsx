import { useState } from 'react'
import { createRoot } from 'react-dom/client'
import { z } from 'zod'
import {
  CopilotChat,
  CopilotKit,
  UseAgentUpdate,
  useAgent,
  useHumanInTheLoop,
  useRenderTool,
} from '@copilotkit/react-core/v2'
import '@copilotkit/react-core/v2/styles.css'
import { Recipe } from './recipe.tsx'

/**
 * The AG-UI dojo's features as CopilotKit pages (react-core 1.74, `/v2`), one per
 * `?feature=`: each the hooks its dojo page uses, with the test ids its end-to-end test reads.
 * The agent id is the feature's name (each its own AG-UI route behind the runtime).
 */

const params = new URLSearchParams(location.search)
const feature = params.get('feature') ?? 'agentic_chat'
const threadId = params.get('thread') ?? crypto.randomUUID()
/** What the chat reported (`CopilotChat`'s `onError`), for the tests. */
const copilotErrors: string[] = ((window as any).copilotErrors = [])

/** The agent's state, re-rendered on each change. */
export function useAgentState<T>() {
  const { agent } = useAgent({ agentId: feature, updates: [UseAgentUpdate.OnStateChanged] })
  return { agent, state: (agent.state ?? {}) as T }
}

/** Backend tool rendering: the weather card of `get_weather`, from its arguments and result. */
function Weather() {
  useRenderTool({
    name: 'get_weather',
    parameters: z.object({ city: z.string() }),
    render: ({ status, parameters, result }) => {
      const weather = status === 'complete' ? JSON.parse(result) : null
      return (
        <div data-testid="weather-card" style={card}>
          <h3>{parameters?.city}</h3>
          <div>Current Weather: {weather?.conditions ?? '…'}</div>
          {weather && (
            <div>
              <span>Humidity</span> {weather.humidity}% · <span>Wind</span> {weather.wind_speed} mph
              · <span>Temperature</span> {weather.temperature}°
            </div>
          )}
        </div>
      )
    },
  })
  return null
}

/** Tool-based generative UI: the haiku of `generate_haiku`'s arguments. */
function Haiku() {
  useRenderTool({
    name: 'generate_haiku',
    parameters: z.object({ japanese: z.array(z.string()), english: z.array(z.string()) }),
    render: ({ parameters }) => (
      <div data-testid="haiku-card" style={card}>
        {(parameters?.japanese ?? []).map((line, i) => (
          <div key={i} data-testid="haiku-line">
            <span data-testid="haiku-japanese">{line}</span> ·{' '}
            <span data-testid="haiku-english">{parameters?.english?.[i]}</span>
          </div>
        ))}
      </div>
    ),
  })
  return null
}

type Step = { description: string; status: string }

/** Human in the loop: `generate_task_steps` is the page's tool: steps to pick, then Confirm. */
function TaskSteps() {
  useHumanInTheLoop({
    name: 'generate_task_steps',
    description: 'Show the steps of a task for the person to pick',
    parameters: z.object({
      steps: z.array(z.object({ description: z.string(), status: z.string() })),
    }),
    render: ({ args, status, respond }) => (
      <StepPicker steps={args.steps ?? []} status={status} respond={respond} />
    ),
  })
  return null
}

function StepPicker(props: {
  steps: Partial<Step>[]
  status: string
  respond?: (r: unknown) => Promise<void>
}) {
  const [off, setOff] = useState<Set<number>>(new Set())
  const [done, setDone] = useState(false)
  const picked = props.steps.filter((_, i) => !off.has(i))
  return (
    <div data-testid="select-steps" style={card}>
      {props.steps.map((step, i) => (
        <label key={i} data-testid="step-item" style={{ display: 'block' }}>
          <input
            type="checkbox"
            checked={!off.has(i)}
            disabled={done || !props.respond}
            onChange={() =>
              setOff((s) => new Set(s.has(i) ? [...s].filter((n) => n !== i) : [...s, i]))
            }
          />
          <span data-testid="step-text">{step.description}</span>
        </label>
      ))}
      {props.status === 'executing' && props.respond && !done && (
        <button
          style={button}
          onClick={() => {
            setDone(true)
            void props.respond!({ accepted: true, steps: picked })
          }}
        >
          Confirm
        </button>
      )}
    </div>
  )
}

/** Agentic generative UI: the agent's `steps` as they complete. */
function TaskProgress() {
  const { state } = useAgentState<{ steps?: Step[] }>()
  if (!Array.isArray(state.steps)) return null
  return (
    <div data-testid="task-progress" style={card}>
      {state.steps.map((step, i) => (
        <div key={i} data-status={step.status}>
          <span data-testid="task-step-text">{step.description}</span>{' '}
          {step.status === 'completed' ? '✓' : '…'}
        </div>
      ))}
    </div>
  )
}

/** Predictive state updates: the document as it streams, and `confirm_changes` (the page's tool). */
function Document() {
  const { state } = useAgentState<{ document?: string }>()
  useHumanInTheLoop({
    name: 'confirm_changes',
    description: 'Ask the person to confirm the changes to the document',
    parameters: z.object({}),
    render: ({ status, respond }) => <ConfirmChanges status={status} respond={respond} />,
  })
  return (
    <div className="document" data-testid="document" style={card}>
      {state.document ?? ''}
    </div>
  )
}

function ConfirmChanges(props: { status: string; respond?: (r: unknown) => Promise<void> }) {
  const [answer, setAnswer] = useState<'accepted' | 'rejected' | null>(null)
  const decide = (accepted: boolean) => {
    setAnswer(accepted ? 'accepted' : 'rejected')
    void props.respond?.({ accepted })
  }
  const open = props.status === 'executing' && !answer
  return (
    <div data-testid="confirm-changes-modal" style={card}>
      <strong>Confirm the changes?</strong>
      {answer === 'accepted' && <span> ✓ Accepted</span>}
      {answer === 'rejected' && <span> ✗ Rejected</span>}
      <div>
        <button
          data-testid="reject-button"
          style={button}
          disabled={!open}
          onClick={() => decide(false)}
        >
          Reject
        </button>
        <button
          data-testid="confirm-button"
          style={button}
          disabled={!open}
          onClick={() => decide(true)}
        >
          Confirm
        </button>
      </div>
    </div>
  )
}

export const card = { border: '1px solid #c7c7d1', borderRadius: 8, padding: 12, margin: '8px 0' }
export const button = {
  border: '1px solid #c7c7d1',
  borderRadius: 6,
  padding: '4px 14px',
  background: '#fff',
  cursor: 'pointer',
}

const PANELS: Record<string, () => React.ReactNode> = {
  backend_tool_rendering: Weather,
  tool_based_generative_ui: Haiku,
  human_in_the_loop: TaskSteps,
  agentic_generative_ui: TaskProgress,
  shared_state: () => <Recipe useAgentState={useAgentState} />,
  predictive_state_updates: Document,
}
const Panel = PANELS[feature] ?? (() => null)

createRoot(document.getElementById('root')!).render(
  <CopilotKit runtimeUrl="/api/copilotkit">
    <div style={{ display: 'flex', height: '100vh' }}>
      <div style={{ flex: 1, overflow: 'auto', padding: 8 }} data-testid="panel">
        <Panel />
      </div>
      <div style={{ flex: 1 }}>
        <CopilotChat
          agentId={feature}
          threadId={threadId}
          onError={(event) => {
            if ('code' in event) copilotErrors.push(`${event.code}: ${event.error.message}`)
          }}
        />
      </div>
    </div>
  </CopilotKit>
)
