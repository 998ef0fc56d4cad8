import { jsonSchema, tool } from 'ai'
import { finish, text, toolCall, type Turn } from './ai_sdk.js'

/** The approval tests' shared pieces (tests/ai_sdk_tool_approval.spec.ts, ai_sdk_signed_approval.spec.ts). */
export const alice = { id: 'alice' }
export const decider = { principal: alice, via: 'api' }
export const SECRET = 'approval-secret-for-tests'

const objectSchema = <T>() =>
  jsonSchema<T>({ type: 'object', properties: {}, additionalProperties: true })

/** `search` and `send_email`, neither with `needsApproval` unless asked; each keeps the inputs it ran with. */
export function tools(options: { needsApproval?: boolean } = {}) {
  const ran: { tool: string; input: unknown }[] = []
  return {
    ran,
    tools: {
      search: tool({
        inputSchema: objectSchema<{ q: string }>(),
        execute: async (input) => (ran.push({ tool: 'search', input }), { found: 3 }),
      }),
      send_email: tool({
        inputSchema: objectSchema<{ to: string }>(),
        ...(options.needsApproval ? { needsApproval: true } : {}),
        execute: async (input) => (ran.push({ tool: 'send_email', input }), { sent: true }),
      }),
    },
  }
}

/** One step that searches and sends (to `to`), then the answer after the tools. */
export const searchThenSend = (to = 'team@example.com'): Turn[] => [
  [
    ...text('On it. '),
    ...toolCall('call_1', 'search', { q: 'weekly' }),
    ...toolCall('call_2', 'send_email', { to }),
    ...finish('tool-calls'),
  ],
  [...text('Done.'), ...finish()],
]

export const textOf = (frames: any[]) =>
  frames
    .filter((f) => f.t === 'text')
    .map((f) => f.v)
    .join('')
