import { createRoot } from 'react-dom/client'
import {
  CopilotChat,
  CopilotKit,
  useDefaultRenderTool,
  useInterrupt,
} from '@copilotkit/react-core/v2'
import '@copilotkit/react-core/v2/styles.css'

/** The approval card and the question form: CopilotKit's stock `useInterrupt`. */
function Interrupts() {
  useDefaultRenderTool()
  useInterrupt({
    agentId: 'assistant',
    render: ({ interrupt, resolve, cancel }) => {
      if (interrupt?.reason === 'tool_call') {
        return (
          <div className="approval-card" style={card}>
            <strong>{interrupt.message}</strong>
            <div style={{ display: 'flex', gap: 8, marginTop: 8 }}>
              <button style={{ ...button, ...primary }} onClick={() => resolve({ approved: true })}>
                Approve
              </button>
              <button style={button} onClick={() => cancel()}>
                Reject
              </button>
            </div>
          </div>
        )
      }
      const questions = (interrupt?.responseSchema as any)?.properties?.answers?.properties ?? {}
      const answers = Object.fromEntries(
        Object.entries<any>(questions)
          .filter(([, q]) => q.items?.enum)
          .map(([id, q]) => [id, [q.items.enum.at(-1)]])
      )
      return (
        <div className="question-card" style={card}>
          <strong>{interrupt?.message}</strong>
          <button style={{ ...button, marginLeft: 8 }} onClick={() => resolve({ answers })}>
            Answer {Object.values(answers).flat().join(', ')}
          </button>
        </div>
      )
    },
  })
  return null
}

const card = { border: '1px solid #c7c7d1', borderRadius: 8, padding: 12, margin: '8px 0' }
const button = {
  border: '1px solid #c7c7d1',
  borderRadius: 6,
  padding: '4px 14px',
  background: '#fff',
  cursor: 'pointer',
}
const primary = { background: '#1f6feb', borderColor: '#1f6feb', color: '#fff' }

const threadId = new URLSearchParams(location.search).get('thread') ?? crypto.randomUUID()
/** What the chat reported (`CopilotChat`'s `onError`: a failed run, a refused event), for the tests. */
const copilotErrors: string[] = ((window as any).copilotErrors = [])

createRoot(document.getElementById('root')!).render(
  <CopilotKit runtimeUrl="/api/copilotkit">
    <Interrupts />
    <div style={{ height: '100vh' }}>
      <CopilotChat
        agentId="assistant"
        threadId={threadId}
        onError={(event) => {
          if ('code' in event) copilotErrors.push(`${event.code}: ${event.error.message}`)
        }}
      />
    </div>
  </CopilotKit>
)
